"""verl and TRL console lines (docs/log-format.md §8) read into the same records and rules."""

from __future__ import annotations

import json
import math

from grpo_tui import cli
from grpo_tui.lines.formats import COUNTED, parse_trl, parse_verl
from grpo_tui.lines.parse import parse_lines


def test_verl_line_with_ray_prefix_numpy_values_and_tqdm_glue():
    items, counts = parse_lines(
        [
            "\x1b[36m(TaskRunner pid=4242)\x1b[0m step:12 - actor/entropy:0.412 - actor/grad_norm:np.float64(0.52)"
            " - critic/score/mean:0.31 - response_length/mean:412.0 - response_length/clip_ratio:0.05",
            "Training Progress:  10%|#         | 2/20 [01:10<10:30, 35.00s/it]step:13 - critic/score/mean:0.35"
            " - actor/grad_norm:nan - response_length_non_aborted/mean:400.0",
            "saved to /ckpt/global_step:14 - not a metric line",
        ]
    )
    recs = [i for i in items if i.__class__.__name__ == "MetricRecord"]
    assert [(r.n, r.source) for r in recs] == [(12, "verl"), (13, "verl")]
    assert recs[0].metrics["actor/grad_norm"] == 0.52 and recs[0].metrics["critic/score/mean"] == 0.31
    assert math.isnan(recs[1].metrics["actor/grad_norm"]) and recs[1].nonfinite == {"actor/grad_norm": "nan"}
    assert "response_length/mean" not in recs[1].metrics  # the look-alike stays apart
    assert counts.lines == counts.metric_lines + counts.event_lines + counts.noise + counts.unreadable


def test_verl_parser_ignores_global_step_paths():
    assert parse_verl("checkpoint at /x/global_step:14 - y") is None


def test_trl_dicts_bare_and_string_formatted_eval_and_summary():
    got = parse_trl(
        "{'loss': 0.0031, 'grad_norm': 0.52, 'reward': 0.62, 'completions/mean_length': 412.3, "
        "'frac_reward_zero_std': 0.25, 'epoch': 0.02}"
    )
    assert got is not None and got.kind == "rollout" and got.n == COUNTED
    assert got.metrics["reward"] == 0.62 and got.metrics["completions/mean_length"] == 412.3
    kind, _, m, raw, _, _ = parse_trl(
        "{'loss': '0.0031', 'grad_norm': 'nan', 'reward': '0.64', 'num_tokens': '1.235e+05'}"
    )
    assert m["loss"] == 0.0031 and m["num_tokens"] == 123500.0 and math.isnan(m["grad_norm"])
    assert raw == {"grad_norm": "nan"}
    assert parse_trl("{'eval_loss': 0.5, 'eval_reward': 0.6, 'epoch': 0.05}") == (
        "eval",
        COUNTED,
        {"eval_loss": 0.5, "eval_reward": 0.6},
        {},
        "trl",
        None,
    )
    # the HF Trainer's summary once training is over: no step, the run's finish line
    assert parse_trl("{'train_runtime': 10.0, 'train_loss': 0.1, 'epoch': 1.0}") == (
        "end",
        COUNTED,
        {"train_runtime": 10.0, "train_loss": 0.1, "epoch": 1.0},
        {},
        "trl",
        None,
    )


def test_check_on_verl_and_trl_gives_json_and_matching_exit_codes(tmp_path, capsys):
    verl = tmp_path / "verl.log"
    verl.write_text(
        "".join(
            f"step:{i} - critic/score/mean:{0.3 + i * 0.01} - actor/grad_norm:0.5 - "
            f"actor/pg_clipfrac:0.002 - response_length/mean:{400 + i}\n"
            for i in range(1, 30)
        )
    )
    trl = tmp_path / "trl.log"
    trl.write_text(
        "".join(
            f"{{'loss': 0.01, 'grad_norm': 0.4, 'reward': {0.5 + i * 0.001}, "
            f"'frac_reward_zero_std': 0.2, 'epoch': {i / 100}}}\n"
            for i in range(30)
        )
    )
    for path in (verl, trl):
        rc = cli.main(["check", "--json", str(path)])  # in process: same exit code and JSON
        obj = json.loads(capsys.readouterr().out)
        assert rc == {"ok": 0, "warning": 1, "critical": 2, "unknown": 3}[obj["status"]]
        # Miles defaults don't apply to other setups: no signal is judged against a range (n/a),
        # but the trend rules judged 29 steps and none fired: OK, never a false WARNING.
        assert obj["status"] == "ok" and obj["alerts"] == [], obj["alerts"]
        assert all(s["status"] == "unknown" for s in obj["signals"].values())
        assert obj["signals"]["reward"]["last"] is not None


def test_verl_end_of_training_is_a_finish_line():
    """verl's trainer prints `Final validation metrics: {...}` (through pprint: quoted, often
    wrapped) once after its last step; with validation off the dict is None."""
    from grpo_tui.lines.records import Event

    for line in (
        "(TaskRunner pid=42) ('Final validation metrics: {'val-core/openai/gsm8k/reward/mean@1': '",
        "(TaskRunner pid=42) 'Final validation metrics: None'",
    ):
        items, counts = parse_lines(["(TaskRunner pid=42) step:1 - actor/grad_norm:0.5 - critic/score/mean:0.3", line])
        (ev,) = [x for x in items if isinstance(x, Event)]
        assert ev.kind == "train_done" and ev.data["framework"] == "verl"
        assert ev.text.startswith("Final validation metrics:") and counts.event_lines == 1


def test_miles_jsonl_kinds_follow_the_console():
    """rollout/step dicts: the trainer's rollout dict is `rollout N:`, the rollout manager's
    (rollout/... with perf/...) and the trainer's timers `perf N:`; the step key's own entry only
    where the console shows it (`step N:`)."""
    rows = [
        ("rollout/step", {"rollout/raw_reward": 0.5}, "rollout"),
        ("rollout/step", {"rollout/response_len/mean": 9.0, "perf/rollout_time": 3.0}, "perf"),
        ("rollout/step", {"perf/train_time": 3.0}, "perf"),
        ("rollout/step", {"multi_turn/turns": 2}, "multi_turn"),
        ("train/step", {"train/grad_norm": 0.5}, "step"),
        ("eval/step", {"eval/gsm8k": 0.5}, "eval"),
    ]
    items, counts = parse_lines(
        [json.dumps({"ts": 1787306454.5, "step_key": k, "step": 7, "metrics": dict(m, **{k: 7})}) for k, m, _ in rows]
        + ['{"ts": 1.0, "step_key": "other/step", "step": 1, "metrics": {"a": 1}}']
    )
    recs = [i for i in items if i.__class__.__name__ == "MetricRecord"]
    assert [r.kind for r in recs] == [want for _, _, want in rows]
    assert ("train/step" in recs[4].metrics) and not any("rollout/step" in r.metrics for r in recs)
    assert recs[0].time == "2026-08-21 10:00:54.500" and recs[0].ts == 1787306454.5
    assert counts.noise == 1 and counts.metric_lines == len(rows)


def test_json_summary_is_a_finish_line_and_eval_keeps_its_own_keys():
    items, _ = parse_lines(
        [
            '{"eval_loss": 0.5, "eval_reward": 0.7, "epoch": 0.1, "global_step/max_steps": "10/20"}',
            '{"train_runtime": 812.4, "train_loss": 0.01, "epoch": 1.0}',
        ]
    )
    ev, end = items
    assert (ev.kind, ev.n, ev.metrics) == ("eval", 10, {"eval_loss": 0.5, "eval_reward": 0.7})
    assert end.kind == "train_done" and end.data["framework"] == "trl"


def test_prime_rl_2026_lines_and_what_is_not_a_step_line():
    items, counts = parse_lines(
        [
            "\x1b[2m10:00:33\x1b[0m \x1b[32mSUCCESS\x1b[0m Step 9 |   4.29s | Loss 0.0012 | Entropy 0.3571 | Mismatch KL 0.0007"
            " | Grad. Norm 0.2100 | LR 1.00e-06 | Throughput 1234 tokens/s | MFU 12.5% | Peak Mem. 40.1 GiB",
            "10:00:34 SUCCESS Step 9 |  1m 3s | Reward 0.5000 | Trainable 3/4 (75.0%) | Error 0.0% | Truncation 12.0%",
            "10:00:35   DEBUG Micro Step 1/4 | Loss 0.1 | Entropy 0.2",
            "10:00:36 SUCCESS Validation | Step 5 | Loss 0.1000",
        ]
    )
    recs = [i for i in items if i.__class__.__name__ == "MetricRecord"]
    assert [(r.n, r.source) for r in recs] == [(9, "prime-rl"), (9, "prime-rl")]
    t, o = recs[0].metrics, recs[1].metrics
    assert (
        t["mismatch_kl/mean"] == 0.0007 and t["optim/lr"] == 1e-06 and t["perf/mfu"] == 12.5 and t["time/step"] == 4.29
    )
    assert o["orchestrator/time/step"] == 63.0 and o["trainable/ratio"] == 0.75 and o["is_truncated/mean"] == 0.12
    assert counts.noise == 2


def test_a_table_row_needs_its_header_and_its_width():
    items, counts = parse_lines(["1 | 0.5 | 0.2", "Step | Training Loss | reward", "2 | 0.5", "3 | 0.5 | No log"])
    recs = [i for i in items if i.__class__.__name__ == "MetricRecord"]
    assert [(r.n, r.metrics) for r in recs] == [(3, {"loss": 0.5})]
    assert counts.noise == 3


def test_megatron_iteration_lines():
    """ms-swift's Megatron GRPO prints Megatron's `iteration N/M | label: value |` line."""
    from grpo_tui.lines.formats import parse_megatron

    line = (
        " [2026-03-03 16:38:36] iteration        2/     624 | consumed samples:          256 | elapsed time: 3m 8s |"
        " loss: -2.5E-02 | reward: nan | completions/mean_length: 4.8E+02 | grad norm: 75.173 |"
    )
    rec = parse_megatron(line)
    assert rec is not None and (rec.kind, rec.n, rec.source) == ("rollout", 2, "trl")
    assert rec.metrics["grad_norm"] == 75.173 and rec.metrics["completions/mean_length"] == 480.0
    assert "elapsed time" not in rec.metrics and rec.raw == {"reward": "nan"}
    assert parse_megatron(line.replace("| reward: nan ", "")) is None  # (no reward: Megatron's SFT line)
    assert parse_megatron("iteration x/ 5 | reward: 1 |") is None
    big = parse_megatron("iteration 99999999999999999999/ 5 | reward: 1 |")
    assert big is not None and big.n is None  # (counted unreadable by the caller)
