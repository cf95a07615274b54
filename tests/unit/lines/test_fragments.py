"""Fragments as people paste them into issues: indented, CRLF, perf records carrying rollout/*."""

from __future__ import annotations

import json

import pytest

from grpo_tui.cli import main
from grpo_tui.lines.parse import parse_lines
from grpo_tui.lines.records import MetricRecord


def _export(tmp_path, text: str, *args: str) -> list[dict]:
    p = tmp_path / "frag.log"
    p.write_bytes(text.encode())
    out = tmp_path / "out" / "out.json"  # never next to the log (docs/contracts.md §6.6)
    out.parent.mkdir()
    assert main(["export", str(p), "--format", "json", "-o", str(out), *args]) == 0
    return json.loads(out.read_text())


def test_indented_crlf_paste_keeps_times_and_exact_values(tmp_path):
    text = (
        "    (MegatronTrainRayActor pid=32167) [2025-12-17 14:10:28] model.py:649 - step 11: "
        "{'train/loss': -6.05e-09, 'train/grad_norm': 0.31, 'train/step': 11}\r\n"
        "\t[2025-12-17 14:10:29] rollout.py:1193 - perf 11: {'rollout/raw_reward': 0.5, "
        "'rollout/zero_std/count_0.1': 2, 'rollout/zero_std/count_0': 3, ...}\r\n"
    )
    rows = _export(tmp_path, text)
    assert rows == [
        {
            "rollout": 11,
            "train/loss": -6.05e-09,
            "train/grad_norm": 0.31,
            "train/step": 11,
            "rollout/raw_reward": 0.5,
            "rollout/zero_std/count_0.1": 2,
            "rollout/zero_std/count_0": 3,
        }
    ]


def test_rollout_metrics_in_a_perf_record_are_exported_with_that_rollout(tmp_path):
    text = (
        "[2026-08-21 10:02:11.317 rollout_manager] metrics.py:89 - perf 7: {'rollout/raw_reward': 0.71875, "
        "'rollout/response_len/mean': 455.25, 'perf/rollout_time': 80.5}\n"
        "[2026-08-21 10:02:40.000 actor_cell0_rank0] train_metric_utils.py:56 - perf 7: {'perf/train_time': 30.1}\n"
    )
    rows = _export(tmp_path, text)
    assert rows == [
        {
            "rollout": 7,
            "rollout/raw_reward": 0.71875,
            "rollout/response_len/mean": 455.25,
            "perf/rollout_time": 80.5,
            "perf/train_time": 30.1,
        }
    ]


def test_look_alike_keys_stay_apart(tmp_path):
    text = (
        "[2026-08-21 10:00:00.000 rollout_manager] metrics.py:89 - perf 0: {'rollout/zero_std/count_0': 4, "
        "'rollout/zero_std/count_0.1': 1, 'eval/x/truncated_ratio': 0.9, 'rollout/truncated_ratio': 0.2}\n"
        "[2026-08-21 10:00:05.000 actor_cell0_rank0] log_utils.py:123 - rollout 0: {'rollout/raw_reward': 0.6, "
        "'rollout/episode_raw_reward': 0.1}\n"
    )
    (row,) = _export(tmp_path, text)
    assert row["rollout/zero_std/count_0"] == 4 and row["rollout/zero_std/count_0.1"] == 1
    assert row["rollout/truncated_ratio"] == 0.2 and row["eval/x/truncated_ratio"] == 0.9
    assert row["rollout/raw_reward"] == 0.6 and row["rollout/episode_raw_reward"] == 0.1


# issue #11 item 5: a pasted fragment whose dict head was elided, closing without `}`
_ELIDED = (
    "rollout 0: {dots} 'rollout/raw_reward': 0.30, 'rollout/response_length/mean': 512.0,\n"
    "    'rollout/truncated_ratio': 0.01,\n"
    "    'rollout/log_probs': -0.3\n"
)


@pytest.mark.parametrize("dots", ["...", "\u2026", "...,"])
@pytest.mark.parametrize("after", ["step 0: {'train/grad_norm': 0.2}\n", ""])
def test_elided_head_fragment_keeps_every_key_it_shows(tmp_path, dots, after):
    rows = _export(tmp_path, _ELIDED.format(dots=dots) + after)
    want = {
        "rollout": 0,
        "rollout/raw_reward": 0.30,
        "rollout/response_length/mean": 512.0,
        "rollout/truncated_ratio": 0.01,
        "rollout/log_probs": -0.3,
    }
    if after:
        want["train/grad_norm"] = 0.2
    assert rows == [want]


def test_elided_head_fragment_with_header_and_closing_brace():
    items, c = parse_lines(
        [
            "[2026-08-21 10:00:00.000 rollout_manager] metrics.py:89 - perf 3: ... 'rollout/raw_reward': 0.5,",
            "  'perf/rollout_time': 80.5}",
        ]
    )
    (rec,) = [i for i in items if isinstance(i, MetricRecord)]
    assert (rec.kind, rec.n, rec.metrics) == ("perf", 3, {"rollout/raw_reward": 0.5, "perf/rollout_time": 80.5})
    assert rec.abridged and not rec.cut and rec.time == "2026-08-21 10:00:00.000"
    assert c.metric_lines == 2 and c.unreadable == 0


def test_cut_live_line_still_drops_its_unfinished_number():
    # not a fragment: the number at the cut may itself be cut, so it is not kept
    items, c = parse_lines(
        ["rollout 0: {'rollout/raw_reward': 0.30, 'rollout/log_probs': -0.3", "step 0: {'train/grad_norm': 0.2}"]
    )
    recs = [i for i in items if isinstance(i, MetricRecord)]
    assert recs[0].metrics == {"rollout/raw_reward": 0.30} and recs[0].cut
    assert recs[1].metrics == {"train/grad_norm": 0.2}
