"""parse.LineParser on every example line of docs/log-format.md (expected values by hand)."""

from __future__ import annotations

import calendar
import math

import pytest

from grpo_tui.lines.parse import LineParser, parse_lines
from grpo_tui.lines.records import Event, MetricRecord

ESC = "\x1b"
CYAN, GREEN, YELLOW, RESET = ESC + "[36m", ESC + "[32m", ESC + "[33m", ESC + "[0m"
RAY_NOTE = (
    " (Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 to disable log deduplication, or see "
    "https://docs.ray.io/en/master/ray-observability/user-guides/configure-logging.html"
    "#log-deduplication for more options.)"
)


def parse(*lines: str):
    items, counts = parse_lines(list(lines))
    assert counts.lines == len(lines)
    assert counts.lines == counts.metric_lines + counts.event_lines + counts.noise + counts.unreadable
    return items, counts


def records(items) -> list[MetricRecord]:
    return [i for i in items if isinstance(i, MetricRecord)]


def events(items, kind: str | None = None) -> list[Event]:
    return [i for i in items if isinstance(i, Event) and (kind is None or i.kind == kind)]


def one_record(*lines: str) -> MetricRecord:
    items, _ = parse(*lines)
    recs = records(items)
    assert len(recs) == 1, items
    return recs[0]


def utc(y, mo, d, h, mi, s, ms=0) -> float:
    return calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)) + ms / 1000.0


# --------------------------------------------------------------------------------------------
# headers (docs/log-format.md §2.5)
# --------------------------------------------------------------------------------------------


def test_miles_head_header_step_line():
    r = one_record(
        "[2026-08-21 10:03:40.112 actor_cell0_rank0] log_utils.py:542 - step 6: "
        "{'train/loss': -0.00213, 'train/step': 6}"
    )
    assert (r.kind, r.n, r.role) == ("step", 6, "")
    assert r.metrics == {"train/loss": -0.00213, "train/step": 6}
    assert r.time == "2026-08-21 10:03:40.112"
    assert r.ts == pytest.approx(utc(2026, 8, 21, 10, 3, 40, 112))
    assert r.proc == "actor_cell0_rank0"
    assert r.source == "log_utils.py"
    assert not r.cut and not r.abridged


def test_doc_placeholder_dict_is_unreadable_not_a_record():
    # the doc's own `{...}` placeholder has no value: nothing to keep, counted unreadable
    items, c = parse("[2026-08-21 10:03:40.112 actor_cell0_rank0] log_utils.py:542 - step 6: {...}")
    assert records(items) == []
    assert c.unreadable == 1


def test_old_slime_header_without_ms_and_name():
    r = one_record(
        "[2025-12-17 14:10:28] model.py:649 - step 11: {'train/loss': -6.05e-09, "
        "'train/lr-pg_0': 1e-06, 'train/step': 11}"
    )
    assert (r.kind, r.n) == ("step", 11)
    assert r.metrics == {"train/loss": -6.05e-09, "train/lr-pg_0": 1e-06, "train/step": 11}
    assert r.time == "2025-12-17 14:10:28"
    assert r.ts == pytest.approx(utc(2025, 12, 17, 14, 10, 28))
    assert r.proc is None
    assert r.source == "model.py"


def test_glued_name_header():
    r = one_record("[2026-06-30 12:00:00main] log_utils.py:123 - rollout 2: {'rollout/raw_reward': 0.5}")
    assert (r.kind, r.n) == ("rollout", 2)
    assert r.proc == "main"
    assert r.time == "2026-06-30 12:00:00"
    assert r.metrics == {"rollout/raw_reward": 0.5}


def test_empty_name_header_trailing_space():
    r = one_record("[2026-08-21 10:00:00.123 ] convert_hf_to_torch_dist.py:10 - perf 1: {'perf/x_time': 1.0}")
    assert (r.kind, r.n) == ("perf", 1)
    assert r.proc is None
    assert r.time == "2026-08-21 10:00:00.123"
    assert r.metrics == {"perf/x_time": 1.0}


@pytest.mark.parametrize("level", ["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"])
def test_level_token_is_optional(level):
    r = one_record(
        f"[2026-08-21 10:00:00.500 actor_cell0_rank0] {level} log_utils.py:123 - rollout 5: "
        "{'rollout/raw_reward': 0.25}"
    )
    assert (r.kind, r.n, r.proc) == ("rollout", 5, "actor_cell0_rank0")
    assert r.metrics == {"rollout/raw_reward": 0.25}


def test_old_header_with_level_and_no_name():
    r = one_record("[2025-12-17 14:10:28] INFO model.py:649 - step 3: {'train/loss': 0.1, 'train/step': 3}")
    assert (r.kind, r.n) == ("step", 3) and r.metrics["train/loss"] == 0.1


def test_pp_rank_proc_name_kept():
    r = one_record(
        "(MegatronTrainRayActor pid=9) [2026-08-21 10:00:00.000 actor_cell1_rank4] log_utils.py:123 - "
        "rollout 0: {'rollout/raw_reward': 0.75}"
    )
    assert r.proc == "actor_cell1_rank4"
    assert r.actor == "MegatronTrainRayActor"


# --------------------------------------------------------------------------------------------
# ft lines (docs/log-format.md §2.7)
# --------------------------------------------------------------------------------------------


def ft_items(msg: str, proc: str = "main", prefix: str = ""):
    return parse(f"{prefix}[2026-08-21 10:02:11.482 {proc}] group.py:147 - {msg}")


def test_ft_actor_update_weights_end_ok():
    items, c = ft_items(
        "ft cls=MegatronTrainRayActor fn=update_weights phase=end ok=true elapsed_s=11.4",
        "actor_cell0_rank0",
        "(MegatronTrainRayActor pid=48790) ",
    )
    assert events(items, "ft_fail") == []
    ends = events(items, "weight_update_end")
    assert len(ends) == 1
    assert ends[0].data["elapsed_s"] == "11.4"
    assert ends[0].time == "2026-08-21 10:02:11.482"


def test_ft_actor_start_is_not_a_failure():
    items, _ = ft_items("ft cls=MegatronTrainRayActor fn=update_weights phase=start", "actor_cell0_rank0")
    assert events(items, "ft_fail") == []


@pytest.mark.parametrize(
    "msg",
    [
        "ft cls=MegatronTrainRayActor fn=train phase=end ok=false elapsed_s=3.2",
        "ft cls=MegatronTrainRayActor fn=train phase=end ok=false elapsed_s=3.2 cancelled=true",
        "ft cls=_FtTrainRayActor fn=train_actor phase=end ok=false elapsed_s=0.4",
    ],
)
def test_ft_ok_false_is_failure(msg):
    items, c = ft_items(msg, "actor_cell0_rank0")
    fails = events(items, "ft_fail")
    assert len(fails) == 1
    assert fails[0].data["ok"] == "false"
    assert fails[0].data["fn"] in ("train", "train_actor")
    if "cancelled" in msg:
        assert fails[0].data["cancelled"] == "true"
    assert c.event_lines == 1


def test_ft_execute_fail_is_failure():
    items, _ = ft_items("ft op=execute phase=fail cell=0 fn=train elapsed_s=38.7")
    (f,) = events(items, "ft_fail")
    assert f.data["op"] == "execute" and f.data["phase"] == "fail" and f.data["cell"] == "0"
    assert f.data["elapsed_s"] == "38.7"


@pytest.mark.parametrize(
    "msg",
    [
        "ft op=train phase=start rollout=3 attempt=0",
        "ft op=refresh phase=decision rollout=3 needs_reconfigure=false reason=alive_config_unchanged,no_pending quorum=0",
        "ft op=execute phase=start cell=0 fn=train n_actors=8",
        "ft op=execute phase=end cell=0 fn=train ok=true elapsed_s=61.0",
        'ft op=check errored= discarded= normal=0 decision=no_retry reason="survivors normal, gradients valid"',
        "ft op=confirm_dead phase=start cell=0 n_actors=8",
        "ft op=train_step rollout=3 step=0 attempt=0 outcome=NORMAL valid_step=true",
        "ft op=train_step rollout=3 step=1 attempt=0 outcome=DISCARDED_SHOULD_RETRY valid_step=false",
        "ft op=cross_cell phase=start kind=log_gather rank=0",
        "ft op=cross_cell phase=end kind=log_gather rank=0 success=true",
    ],
)
def test_ft_healthy_lines_are_not_failures(msg):
    items, _ = ft_items(msg)
    assert events(items, "ft_fail") == []
    assert events(items, "train_retry") == []
    assert records(items) == []


def test_ft_train_attempt_ge_1_is_a_retry():
    items, _ = ft_items("ft op=train phase=start rollout=3 attempt=2")
    (e,) = events(items, "train_retry")
    assert e.data["attempt"] == 2
    assert str(e.data["rollout"]) == "3"


def test_ft_driver_update_weights_start_with_and_without_rollout():
    items, _ = ft_items("ft op=update_weights phase=start rollout=3")
    (e,) = events(items, "weight_update_start")
    assert e.data["rollout"] == "3"
    items, _ = ft_items("ft op=update_weights phase=start rollout=")
    (e,) = events(items, "weight_update_start")
    assert e.data["rollout"] == ""


# --------------------------------------------------------------------------------------------
# SGLang, Ray driver / raylet / prefixes (docs/log-format.md §2.3-§2.6)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        '(SGLangEngine pid=22439) [2025-12-17 14:10:37] INFO:     33.184.122.180:62932 - "GET /health HTTP/1.1" 200 OK',
        "[2026-03-04 15:13:22] Decode batch, #running-req: 2, #token: 84, token usage: 0.00, cuda graph: True, "
        "gen throughput (token/s): 3.62, #queue-req: 1",
        "[2026-03-04 15:13:22] Prefill batch, #new-seq: 1, #new-token: 9, #cached-token: 0, token usage: 0.00, "
        "#running-req: 0, #queue-req: 1, input throughput (token/s): 1.81, cuda graph: False",
        "(SGLangEngine pid=48402) [2026-08-21 10:04:52 TP0] Decode batch, #running-req: 129, #token: 285422, "
        "token usage: 0.22, cuda graph: True, gen throughput (token/s): 12405.28, #queue-req: 0",
        '(SGLangEngine pid=48402) [2026-08-21 10:04:39] INFO:     10.0.0.5:51234 - "POST /continue_generation HTTP/1.1" 200 OK',
        '(SGLangEngine pid=48402) [2026-08-21 10:06:03] INFO:     10.0.0.5:51990 - "GET /health HTTP/1.1" 503 Service Unavailable',
        "(RolloutManager pid=48211) 2026-02-26 13:55:38  WARN smg::router: src/routers/http.rs:321: no healthy worker",
        "(SGLangEngine pid=48402) [2026-08-21 10:04:52 DP1 TP3 EP2] Decode batch, #running-req: 1",
    ],
)
def test_sglang_lines_are_noise(line):
    items, c = parse(line)
    assert items == []
    assert c.noise == 1


def test_sglang_header_timestamp_reaches_next_bare_line_of_same_pid():
    items, _ = parse(
        "(SGLangEngine pid=48402) [2026-08-21 10:04:52 TP0] Decode batch, #running-req: 129",
        "(SGLangEngine pid=48402) RuntimeError: CUDA error: out of memory",
    )
    (e,) = events(items, "oom")
    assert e.time == "2026-08-21 10:04:52"


@pytest.mark.parametrize("sep", ["\t", " ", "  "])
def test_ray_driver_header_tab_or_spaces(sep):
    items, c = parse(
        f"2026-08-21 09:50:02,114{sep}INFO worker.py:1942 -- Connected to Ray cluster. "
        "View the dashboard at http://10.0.0.5:8265",
        "Job 'raysubmit_abc' failed",
    )
    assert c.noise == 1
    (e,) = events(items, "job_failed")
    # the driver line's timestamp (comma ms) is the time of the next unprefixed line
    assert e.time == "2026-08-21 09:50:02.114"
    assert e.ts == pytest.approx(utc(2026, 8, 21, 9, 50, 2, 114))


def test_raylet_oom_line():
    items, c = parse(
        f"{YELLOW}(raylet){RESET} [2026-08-21 11:19:58,004 E 47110 47150] (raylet) node_manager.cc:3069: "
        "1 Workers (tasks / actors) killed due to memory pressure (OOM)"
    )
    (e,) = events(items, "oom")
    assert e.time.startswith("2026-08-21 11:19:58")
    assert "\x1b" not in e.text


@pytest.mark.parametrize(
    "prefix",
    [
        "(RolloutManager pid=48211) ",
        CYAN + "(RolloutManager pid=48211)" + RESET + " ",
        CYAN + "(RolloutManager pid=48211, ip=10.0.0.6)" + RESET + " ",
        ESC + "[93m(RolloutManager pid=48211)" + RESET + " ",  # RAY_COLOR_PREFIX=1
        "(_exec_command_on_node pid=7) ",
        "(pid=123) ",
        "",
    ],
)
def test_ray_prefix_variants_around_a_metric_line(prefix):
    r = one_record(
        prefix + "[2026-08-21 10:02:11.317 rollout_manager] metrics.py:89 - perf 3: "
        "{'rollout/response_len/mean': 2210.41796875, 'perf/rollout_time': 187.2291259765625}"
    )
    assert (r.kind, r.n) == ("perf", 3)
    assert r.metrics == {"rollout/response_len/mean": 2210.41796875, "perf/rollout_time": 187.2291259765625}
    if "RolloutManager" in prefix:
        assert r.actor == "RolloutManager"


@pytest.mark.parametrize(
    "line",
    [
        "(autoscaler +12s) Resized to 8 CPUs.",
        "(pid=123) hello world",
        f"{YELLOW}(raylet){RESET} [2026-08-21 11:19:58,004 I 47110 47150] (raylet) worker_pool.cc:1: started",
    ],
)
def test_system_prefixes_are_noise(line):
    items, c = parse(line)
    assert items == [] and c.noise == 1


# --------------------------------------------------------------------------------------------
# dedup suffix, tqdm \r
# --------------------------------------------------------------------------------------------


def test_dedup_suffix_with_ray_note():
    r = one_record(
        CYAN
        + "(MegatronTrainRayActor pid=48797, ip=10.0.0.6)"
        + RESET
        + " [2026-08-21 10:04:28.311 actor_cell1_rank0] log_utils.py:123 - rollout 4: "
        "{'rollout/raw_reward': 0.5, 'rollout/truncated': 0.25}"
        + GREEN
        + " [repeated 7x across cluster]"
        + RAY_NOTE
        + RESET
    )
    assert r.repeated == 7
    assert r.metrics == {"rollout/raw_reward": 0.5, "rollout/truncated": 0.25}
    assert not r.cut


def test_dedup_suffix_without_note():
    r = one_record(
        "(MegatronTrainRayActor pid=48797) [2026-08-21 10:04:28.311 actor_cell1_rank0] log_utils.py:123 - "
        "rollout 4: {'rollout/raw_reward': 0.5}" + GREEN + " [repeated 2x across cluster]" + RESET
    )
    assert r.repeated == 2
    assert r.metrics == {"rollout/raw_reward": 0.5}


def test_dedup_suffix_plain_text_no_ansi():
    r = one_record(
        "(A pid=1) [2026-08-21 10:04:28.311 x] log_utils.py:123 - rollout 4: "
        "{'rollout/raw_reward': 0.5} [repeated 3x across cluster]"
    )
    assert r.repeated == 3 and r.metrics == {"rollout/raw_reward": 0.5}


def test_dedup_suffix_on_memory_usage_line_is_noise():
    items, c = parse(
        CYAN
        + "(MegatronTrainRayActor pid=48797)"
        + RESET
        + " [2026-08-21 10:04:28.311 actor_cell0_rank7] memory_utils.py:41 - [Rank 7] Memory-Usage before "
        "update_weights: {'gpu': '7', 'total_GB': 139.81, 'free_GB': 61.4, 'used_GB': 78.41, "
        "'allocated_GB': 9.1, 'reserved_GB': 10.2}" + GREEN + " [repeated 7x across cluster]" + RAY_NOTE + RESET
    )
    assert records(items) == []
    assert c.noise == 1


def test_dedup_suffix_on_ft_fail_line():
    items, _ = parse(
        "(MegatronTrainRayActor pid=48797) [2026-08-21 10:04:28.311 actor_cell0_rank7] structured_log.py:27 - "
        "ft cls=MegatronTrainRayActor fn=train phase=end ok=false elapsed_s=2.5"
        + GREEN
        + " [repeated 7x across cluster]"
        + RESET
    )
    (f,) = events(items, "ft_fail")
    assert f.data["elapsed_s"] == "2.5"


def test_carriage_return_last_segment_is_an_event():
    items, c = parse(
        "(MegatronTrainRayActor pid=1) Update weights:  50%|█████     | 18/37\r"
        "saving checkpoint at iteration      19 to /ckpt in torch_dist format"
    )
    (e,) = events(items, "checkpoint_start")
    assert e.text == "saving checkpoint at iteration      19 to /ckpt in torch_dist format"
    assert c.event_lines == 1


def test_tqdm_carriage_return_line_is_one_noise_line():
    line = (
        CYAN + "(MegatronTrainRayActor pid=48790)" + RESET + " Update weights:   0%|          | 0/37 "
        "[00:00<?, ?it/s]\rUpdate weights:  49%|████▊     | 18/37 [00:04<00:04,  3.90it/s]\r"
        "Update weights: 100%|██████████| 37/37 [00:09<00:00,  3.92it/s]"
    )
    items, c = parse(line)
    assert items == [] and c.noise == 1 and c.lines == 1


def test_carriage_return_keeps_last_segment_metric():
    # a metric line written after a progress bar on the same physical line
    r = one_record(
        "(RolloutManager pid=48211) Rollout generation:  50%|█████     | 128/256\r"
        "[2026-08-21 10:02:11.317 rollout_manager] metrics.py:89 - perf 3: {'perf/rollout_time': 187.2291259765625}"
    )
    assert r.metrics == {"perf/rollout_time": 187.2291259765625}
    assert r.time == "2026-08-21 10:02:11.317"


@pytest.mark.parametrize(
    "line",
    [
        "(RolloutManager pid=48211) Rollout generation: 100%|██████████| 256/256 [03:02<00:00,  1.40it/s]",
        "(MegatronTrainRayActor pid=48790) [miles-pp_0] Update weights: 291it [00:08, 34.61it/s]",
        "(RolloutManager pid=48211) Eval aime: 100%|██████████| 30/30 [01:02<00:00,  2.10s/it]",
    ],
)
def test_progress_bars_are_noise(line):
    items, c = parse(line)
    assert items == [] and c.noise == 1


def test_trailing_carriage_return_of_crlf_file():
    r = one_record("[2026-08-21 10:02:11.317 rollout_manager] metrics.py:89 - perf 3: {'perf/rollout_time': 1.5}\r")
    assert r.metrics == {"perf/rollout_time": 1.5}


# --------------------------------------------------------------------------------------------
# metric lines (docs/log-format.md §3)
# --------------------------------------------------------------------------------------------


def test_doubled_megatron_step_lines_both_parsed():
    d = (
        "{'train/loss': -0.00213, 'train/pg_loss': -0.00213, 'train/entropy_loss': 0.0, 'train/pg_clipfrac': 0.00061, "
        "'train/ppo_kl': 2.1e-05, 'train/ess_ratio': 0.9981, 'train/train_rollout_logprob_abs_diff': 0.0118, "
        "'train/train_rollout_kl': 0.00019, 'train/kl_loss': 0.00034, 'train/grad_norm': 0.2144, "
        "'train/lr-pg_0': 1e-06, 'train/lr-pg_1': 1e-06, 'train/step': 6}"
    )
    items, c = parse(
        f"(MegatronTrainRayActor pid=48790) [2026-08-21 10:03:19.774 actor_cell0_rank0] log_utils.py:542 - step 6: {d}",
        f"(MegatronTrainRayActor pid=48790) [2026-08-21 10:03:19.774 actor_cell0_rank0] model.py:854 - step 6: {d}",
    )
    recs = records(items)
    assert [(r.kind, r.n, r.source) for r in recs] == [("step", 6, "log_utils.py"), ("step", 6, "model.py")]
    assert recs[0].metrics == recs[1].metrics
    assert recs[0].metrics["train/ess_ratio"] == 0.9981
    assert recs[0].metrics["train/ppo_kl"] == 2.1e-05
    assert len(recs[0].metrics) == 13
    assert c.metric_lines == 2


def test_step_with_nan_grad_norm():
    r = one_record(
        "(MegatronTrainRayActor pid=48790) [2026-08-21 10:03:40.112 actor_cell0_rank0] log_utils.py:542 - "
        "step 7: {'train/loss': 0.00102, 'train/grad_norm': nan, 'train/lr-pg_0': 1e-06, 'train/step': 7}"
    )
    assert math.isnan(r.metrics["train/grad_norm"])
    assert r.nonfinite == {"train/grad_norm": "nan"}
    assert r.metrics["train/loss"] == 0.00102 and r.metrics["train/step"] == 7


@pytest.mark.parametrize("token,expect", [("inf", math.inf), ("-inf", -math.inf)])
def test_step_with_inf_grad_norm(token, expect):
    r = one_record(
        f"[2026-08-21 10:03:40.112 actor_cell0_rank0] log_utils.py:542 - step 8: "
        f"{{'train/grad_norm': {token}, 'train/step': 8}}"
    )
    assert r.metrics["train/grad_norm"] == expect
    assert r.nonfinite == {"train/grad_norm": token}


def test_critic_step():
    r = one_record(
        "[2026-08-21 10:03:40.112 critic_cell0_rank0] log_utils.py:542 - critic-step 7: "
        "{'train/critic-value_loss': 0.0314, 'train/critic-value_clipfrac': 0.002, 'train/step': 7}"
    )
    assert (r.kind, r.n, r.role) == ("step", 7, "critic")
    assert r.metrics == {"train/critic-value_loss": 0.0314, "train/critic-value_clipfrac": 0.002, "train/step": 7}
    assert r.proc == "critic_cell0_rank0"


def test_multi_turn_line_with_numpy():
    r = one_record(
        "[2026-08-21 10:02:58.903 actor_cell0_rank0] log_utils.py:123 - multi_turn 3: "
        "{'multi_turn/raw_response_length/response_length_mean': 812.5, "
        "'multi_turn/multi_turn_metric/round_number_mean': np.float64(2.375), "
        "'multi_turn/multi_turn_metric/round_number_max': np.int64(4), "
        "'multi_turn/multi_turn_metric/round_number_min': np.int64(1)}"
    )
    assert (r.kind, r.n) == ("multi_turn", 3)
    assert r.metrics == {
        "multi_turn/raw_response_length/response_length_mean": 812.5,
        "multi_turn/multi_turn_metric/round_number_mean": 2.375,
        "multi_turn/multi_turn_metric/round_number_max": 4,
        "multi_turn/multi_turn_metric/round_number_min": 1,
    }


def test_rollout_manager_perf_with_passrate_numpy():
    r = one_record(
        "(RolloutManager pid=48211) [2026-08-21 10:03:41.206 rollout_manager] metrics.py:89 - perf 4: "
        "{'rollout/zero_std/count_0': 4, 'perf/rollout_time': 181.93, "
        "'passrate/pass@1': np.float64(0.4609375), 'passrate/pass@2': np.float64(0.5848214285714286), "
        "'passrate/pass@4': np.float64(0.6772321428571428), 'passrate/pass@8': np.float64(0.75)}"
    )
    assert r.metrics == {
        "rollout/zero_std/count_0": 4,
        "perf/rollout_time": 181.93,
        "passrate/pass@1": 0.4609375,
        "passrate/pass@2": 0.5848214285714286,
        "passrate/pass@4": 0.6772321428571428,
        "passrate/pass@8": 0.75,
    }
    assert r.nonfinite == {}


def test_tensor_value_custom_metric():
    r = one_record(
        "[2026-08-21 10:02:58.903 actor_cell0_rank0] log_utils.py:123 - rollout 3: "
        "{'rollout/raw_reward': 0.4453125, 'custom/score': tensor(0.5, device='cuda:0')}"
    )
    assert r.metrics == {"rollout/raw_reward": 0.4453125, "custom/score": 0.5}


def test_strings_bools_none_and_double_quoted_keys():
    r = one_record(
        "[2026-08-21 10:02:58.903 rollout_manager] metrics.py:53 - eval 0: "
        "{'eval/aime': 0.25, 'eval/name': 'aime, v2', 'eval/ok': True, 'eval/bad': False, "
        "'eval/none': None, \"eval/it's\": 0.5}"
    )
    assert r.metrics == {
        "eval/aime": 0.25,
        "eval/name": "aime, v2",
        "eval/ok": True,
        "eval/bad": False,
        "eval/none": None,
        "eval/it's": 0.5,
    }


def test_abridged_dict_keeps_keys_before_ellipsis():
    items, c = parse(
        "(MegatronTrainRayActor pid=32167) [2025-12-17 14:10:28] model.py:649 - step 11: "
        "{'train/loss': -6.05e-09, 'train/lr-pg_0': 1e-06, ...}"
    )
    (r,) = records(items)
    assert r.abridged
    assert r.metrics == {"train/loss": -6.05e-09, "train/lr-pg_0": 1e-06}
    assert c.abridged_records == 1


def test_abridged_rollout_manager_doc_line():
    r = one_record(
        "(RolloutManager pid=1805485) [2026-04-15 07:57:53] rollout.py:1193 - perf 0: "
        "{'rollout/response_len/mean': 1234.5, 'rollout/zero_std/count_0': 12, ...}"
    )
    assert (r.kind, r.n) == ("perf", 0)
    assert r.metrics == {"rollout/response_len/mean": 1234.5, "rollout/zero_std/count_0": 12}


def test_eval_line_look_alike_keys_kept_apart():
    r = one_record(
        "(RolloutManager pid=48211) [2026-08-21 11:05:40.218 rollout_manager] metrics.py:53 - eval 19: "
        "{'eval/aime-none_reward_ratio': 0.0, 'eval/aime': 0.2302, 'eval/aime/response_len/max': 16384, "
        "'eval/aime/truncated_ratio': 0.0729, 'eval/aime-truncated_ratio': 0.0731}"
    )
    assert (r.kind, r.n) == ("eval", 19)
    assert r.metrics["eval/aime/truncated_ratio"] == 0.0729
    assert r.metrics["eval/aime-truncated_ratio"] == 0.0731
    assert r.metrics["eval/aime"] == 0.2302
    assert r.metrics["eval/aime/response_len/max"] == 16384


@pytest.mark.parametrize("reason", ["ckpt_missing", "unhealthy"])
def test_eval_skipped(reason):
    items, c = parse(
        f"(RolloutManager pid=48211) [2026-08-21 11:05:40.218 rollout_manager] WARNING metrics.py:68 - "
        f"eval 19 skipped: {reason}"
    )
    assert records(items) == []
    (e,) = events(items, "eval_skipped")
    assert e.data == {"rollout": 19, "reason": reason}


def test_eval_reward_none_warning_is_not_a_metric():
    items, c = parse(
        "[2026-08-21 11:05:40.218 rollout_manager] metrics.py:34 - eval/aime: 3/32 samples have "
        "reward=None (likely errored/aborted trials); treating as 0.0 for metrics."
    )
    assert records(items) == []
    assert c.metric_lines == 0


@pytest.mark.parametrize(
    "line",
    [
        "[2026-08-21 10:03:40.131 actor_cell0_rank0] timer.py:42 - Timer actor_train end (elapsed: 41.5s)",
        "[2026-08-21 10:03:40.131 actor_cell0_rank0] timer.py:31 - Timer actor_train start",
        "[2026-08-21 10:03:40.131 actor_cell0_rank0] log_utils.py:431 - [CPU memory] after_offload_train: 12.34 GB "
        "(rollout_id=3, step=6)",
        "[2026-08-21 10:04:28.305 actor_cell0_rank0] memory_utils.py:41 - [Rank 0] Memory-Usage before update_weights: "
        "{'gpu': '0', 'total_GB': 139.81, 'free_GB': 61.02, 'used_GB': 78.79, 'allocated_GB': 9.1, 'reserved_GB': 10.2}",
        "[2026-08-21 10:04:28.305 actor_cell0_rank0] update_weight.py:12 - [disk delta v=4] density=1.25% wire=0.42 GB",
        "[2026-08-21 10:02:11.300 rollout_manager] rollout.py:50 - First rollout sample: text_preview='step 3: {x}', "
        "label=4, reward_summary={'r': 1}",
    ],
)
def test_other_metric_ish_lines_are_not_records(line):
    items, c = parse(line)
    assert records(items) == []
    assert c.metric_lines == 0


# --------------------------------------------------------------------------------------------
# the 503 burst, connection errors, max retries (docs/log-format.md §6)
# --------------------------------------------------------------------------------------------


def test_503_two_line_retry():
    p = "(RolloutManager pid=48211) "
    items, c = parse(
        p + "[2026-08-21 10:06:02.771 rollout_manager] http_utils.py:226 - Error: Server error "
        "'503 Service Unavailable' for url 'http://10.0.0.5:3817/generate'",
        p + "For more information check: https://developer.mozilla.org/en-US/docs/Web/HTTP/Status/503, retrying... "
        "(attempt 1/60, url=http://10.0.0.5:3817/generate, response=No available workers)",
        p + "[2026-08-21 10:06:03.790 rollout_manager] http_utils.py:226 - Error: Server error "
        "'503 Service Unavailable' for url 'http://10.0.0.5:3817/generate'",
        p + "For more information check: https://developer.mozilla.org/en-US/docs/Web/HTTP/Status/503, retrying... "
        "(attempt 2/60, url=http://10.0.0.5:3817/generate, response=No available workers)",
    )
    retries = events(items, "engine_retry")
    assert len(retries) == 2
    assert [e.data["attempt"] for e in retries] == [1, 2]
    assert all(e.data["max"] == 60 for e in retries)
    assert all(e.data["status"] == "503" for e in retries)
    assert all(e.data["url"] == "http://10.0.0.5:3817/generate" for e in retries)
    # the continuation line carries the time of its header line
    assert retries[0].time == "2026-08-21 10:06:02.771"
    assert retries[1].time == "2026-08-21 10:06:03.790"


def test_connection_error_one_liner():
    items, _ = parse(
        "(RolloutManager pid=48211) [2026-08-21 10:06:02.771 rollout_manager] http_utils.py:226 - "
        "Error: All connection attempts failed, retrying... (attempt 3/60, "
        "url=http://10.0.0.5:3817/generate, response=None)"
    )
    (e,) = events(items, "engine_retry")
    assert e.data["attempt"] == 3 and e.data["max"] == 60
    assert e.data["url"] == "http://10.0.0.5:3817/generate"
    assert e.data["status"] != "503"


def test_timeout_empty_message_retry():
    items, _ = parse(
        "(RolloutManager pid=48211) [2026-08-21 10:06:02.771 rollout_manager] http_utils.py:226 - "
        "Error: , retrying... (attempt 7/60, url=http://10.0.0.5:3817/generate, response=None)"
    )
    (e,) = events(items, "engine_retry")
    assert e.data["attempt"] == 7
    assert e.data["status"] != "503"


def test_max_retries():
    items, _ = parse(
        "(RolloutManager pid=48211) [2026-08-21 10:07:02.771 rollout_manager] http_utils.py:230 - "
        "Max retries (60) reached, failing... (url=http://10.0.0.5:3817/generate)"
    )
    assert len(events(items, "max_retries")) == 1
    assert events(items, "engine_retry") == []


def test_retry_utils_line_is_not_an_engine_retry():
    items, _ = parse("[2026-08-21 11:20:04.512 main] retry_utils.py:36 - retry: attempt 1 failed, retrying in 1.0s")
    assert events(items, "engine_retry") == []


# --------------------------------------------------------------------------------------------
# health, crashes / tracebacks / OOM (docs/log-format.md §6)
# --------------------------------------------------------------------------------------------


def test_health_check_failed_and_recovered():
    p = "(RolloutManager pid=48211) "
    items, _ = parse(
        p
        + "[2026-08-21 10:06:14.002 rollout_manager] health_monitor.py:154 - Health check failed for rollout engine 1 "
        "(ray timeout or error). Killing actor. Exception: The actor died unexpectedly before finishing this task.",
        p + "[2026-08-21 10:07:40.551 rollout_manager] server_group.py:209 - Recovered 1 dead rollout engines "
        "(worker_type=regular)",
    )
    assert len(events(items, "health_check_failed")) == 1
    (rec,) = events(items, "engines_recovered")
    assert rec.data["count"] == 1
    assert rec.time == "2026-08-21 10:07:40.551"


TRACEBACK = [
    "[2026-08-21 11:20:01.338 main] cell.py:251 - ft op=execute phase=fail cell=0 fn=train elapsed_s=38.7",
    "Traceback (most recent call last):",
    '  File "/root/miles/miles/ray/train/cell.py", line 234, in _execute_raw',
    "    result = await asyncio.gather(",
    "             ^^^^^^^^^^^^^^^^^^^^^",
    "ray.exceptions.RayTaskError(OutOfMemoryError): ray::MegatronTrainRayActor.train() (pid=48790, ip=10.0.0.5, "
    "actor_id=8e1f0c2b7a4d5e6f9a0b1c2d01000000, repr=<miles.backends.megatron_utils.actor.MegatronTrainRayActor "
    "object at 0x7f3b2c1d5e80>)",
    '  File "/root/miles/miles/backends/megatron_utils/actor.py", line 413, in train',
    "    result = self.train_actor(",
    "             ^^^^^^^^^^^^^^^^^",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 7.42 GiB. GPU 0 has a total capacity of 139.81 GiB "
    "of which 3.05 GiB is free. Process 48790 has 136.75 GiB memory in use.",
    "[2026-08-21 11:20:04.512 main] retry_utils.py:36 - retry: attempt 1 failed, retrying in 1.0s",
]


def test_traceback_is_one_event_with_all_lines():
    items, c = parse(*TRACEBACK)
    (tb,) = events(items, "traceback")
    assert tb.lines == TRACEBACK[1:10]
    assert tb.data["exception"] == TRACEBACK[9]
    assert tb.time == "2026-08-21 11:20:01.338"
    assert tb.line_no == 2
    assert len(events(items, "ft_fail")) == 1
    assert len(events(items, "oom")) >= 1
    assert c.event_lines == 10  # ft line + 9 traceback lines
    assert c.noise == 1  # the retry_utils line


def test_ray_prefixed_traceback_stops_at_other_pid():
    p = "(MegatronTrainRayActor pid=48790) "
    items, c = parse(
        p + "[2026-08-21 11:20:00.100 actor_cell0_rank0] structured_log.py:27 - ft cls=MegatronTrainRayActor fn=train "
        "phase=end ok=false elapsed_s=38.1",
        p + "Traceback (most recent call last):",
        p + '  File "/root/miles/miles/utils/structured_log.py", line 40, in wrapper',
        p + "    return fn(*args, **kwargs)",
        p + "RuntimeError: CUDA error: out of memory",
        "(RolloutManager pid=48211) Rollout generation: 100%|██████████| 256/256",
    )
    (tb,) = events(items, "traceback")
    assert len(tb.lines) == 4
    assert tb.data["exception"] == "RuntimeError: CUDA error: out of memory"
    assert tb.data.get("oom")
    assert c.noise == 1


def test_traceback_ends_before_unrelated_bare_lines():
    items, c = parse(
        "Traceback (most recent call last):",
        '  File "/root/miles/train.py", line 156, in <module>',
        "    asyncio.run(train(args))",
        "AssertionError: Cannot recover when all cells are dead",
        "-" * 40,
        "Job 'raysubmit_XXXX' failed",
        "-" * 40,
        "Status message: Job entrypoint command failed with exit code 1, last available logs: ...",
        "step 14: {'train/loss': 3.0, 'train/step': 14}",
    )
    (tb,) = events(items, "traceback")
    assert tb.lines[-1] == "AssertionError: Cannot recover when all cells are dead"
    assert len(tb.lines) == 4
    (job,) = events(items, "job_failed")
    assert job.data["job"] == "raysubmit_XXXX"
    (r,) = records(items)
    assert (r.kind, r.n) == ("step", 14) and r.metrics == {"train/loss": 3.0, "train/step": 14}


def test_chained_traceback_is_one_event():
    lines = [
        "Traceback (most recent call last):",
        '  File "a.py", line 1, in f',
        "KeyError: 'x'",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "a.py", line 3, in g',
        "ValueError: bad",
    ]
    items, c = parse(*lines)
    tbs = events(items, "traceback")
    assert len(tbs) == 1
    assert tbs[0].lines == lines
    assert tbs[0].data["exception"] == "ValueError: bad"


def test_sglang_scheduler_exception_starts_a_traceback():
    p = "(SGLangEngine pid=48402) "
    items, _ = parse(
        p + "[2026-08-21 10:05:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        p + '  File "/sgl/scheduler.py", line 10, in run',
        p + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
        p + "[2026-08-21 10:05:01] Received sigquit from a child process. It usually means the child failed.",
    )
    (tb,) = events(items, "traceback")
    assert len(tb.lines) == 3
    assert tb.time == "2026-08-21 10:05:00"
    assert events(items, "oom")


@pytest.mark.parametrize(
    "line",
    [
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 7.42 GiB.",
        "RuntimeError: CUDA error: out of memory",
        "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.",
        "(MegatronTrainRayActor pid=1) torch.OutOfMemoryError: CUDA out of memory.",
    ],
)
def test_oom_variants(line):
    items, _ = parse(line)
    assert len(events(items, "oom")) == 1


def test_nccl_watchdog():
    items, _ = parse(
        "(MegatronTrainRayActor pid=48790) [rank0]:[E821 10:30:00.123456 ProcessGroupNCCL.cpp:616] [Rank 0] "
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1234, OpType=ALLREDUCE, "
        "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600000 milliseconds before timing out."
    )
    assert len(events(items, "nccl_timeout")) == 1


@pytest.mark.parametrize(
    "line,kind",
    [
        ("Job 'raysubmit_XXXX' failed", "job_failed"),
        ("Job 'raysubmit_9aBc' succeeded", "job_succeeded"),
    ],
)
def test_job_end(line, kind):
    items, _ = parse(line)
    (e,) = events(items, kind)
    assert e.data["job"] in ("raysubmit_XXXX", "raysubmit_9aBc")


def test_job_submitted_is_not_an_end():
    items, _ = parse("Job 'raysubmit_XXXX' submitted successfully")
    assert events(items, "job_failed") == [] and events(items, "job_succeeded") == []


def test_fatal_async_misuse():
    items, _ = parse("[2026-08-21 10:00:00.000 main] logging_utils.py:88 - Fatal async misuse, aborting: loop closed")
    assert len(events(items, "fatal")) == 1


# --------------------------------------------------------------------------------------------
# checkpoints, W&B / TensorBoard, launch (docs/log-format.md §6)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line,kind,it",
    [
        (
            "(MegatronTrainRayActor pid=48790) saving checkpoint at iteration      19 to /root/shared_data/checkpoints/qwen3-4b "
            "in torch_dist format",
            "checkpoint_start",
            19,
        ),
        (
            "(MegatronTrainRayActor pid=48790)   successfully saved checkpoint from iteration      19 to "
            "/root/shared_data/checkpoints/qwen3-4b [ t 1/1, p 1/1 ]",
            "checkpoint_saved",
            19,
        ),
        ("  successfully saved checkpoint from iteration    1234 to /ckpt", "checkpoint_saved", 1234),
        ("saving checkpoint at iteration 1234567 to /ckpt in torch_dist format", "checkpoint_start", 1234567),
    ],
)
def test_checkpoint_lines_with_padded_iteration(line, kind, it):
    items, _ = parse(line)
    (e,) = events(items, kind)
    assert e.data["iteration"] == it


@pytest.mark.parametrize(
    "line",
    [
        "[2026-08-21 09:50:11.402 main] wandb_utils.py:38 - W&B offline mode enabled. Data will be saved locally.",
        "[2026-08-21 09:50:11.402 main] wandb_utils.py:40 - W&B disabled mode enabled. No data will be logged.",
        "[2026-08-21 09:50:11.402 main] wandb_utils.py:42 - W&B online mode enabled. Data will be uploaded to cloud.",
        "wandb: Tracking run with wandb version 0.21.0",
        ESC + "[34m" + ESC + "[1mwandb" + RESET + ": W&B syncing is set to `offline` in this directory.",
    ],
)
def test_wandb_lines(line):
    items, _ = parse(line)
    assert len(events(items, "wandb")) == 1


def test_tensorboard_line():
    items, _ = parse(
        "[2026-08-21 09:50:11.950 main] tensorboard_utils.py:44 - Saving tensorboard log to "
        "tensorboard_log/miles/20260821_095011."
    )
    (e,) = events(items, "tensorboard")
    assert e.time == "2026-08-21 09:50:11.950"


EXEC_LINE = (
    "EXEC: export no_proxy=127.0.0.1 && export PYTHONUNBUFFERED=1 && ray job submit "
    '--address="http://127.0.0.1:8265" --runtime-env-json=\'{"env_vars": {"PYTHONUNBUFFERED": "1", '
    '"CUDA_DEVICE_MAX_CONNECTIONS": "1", "NCCL_NVLS_ENABLE": "1", "no_proxy": "127.0.0.1,127.0.0.1", '
    '"MASTER_ADDR": "127.0.0.1", "PYTHONPATH": "/root/Megatron-LM:/root/miles"}}\' -- python3 /root/miles/train.py '
    "--swiglu --num-layers 36 --hidden-size 2560 --hf-checkpoint /root/models/Qwen3-4B --num-rollout 3000 "
    "--rollout-batch-size 32 --n-samples-per-prompt 8 --global-batch-size 128 --use-wandb --wandb-mode offline"
)


def test_exec_launch_line_flags():
    items, c = parse(EXEC_LINE)
    (e,) = events(items, "launch")
    f = e.data["flags"]
    assert f["rollout-batch-size"] == "32"
    assert f["n-samples-per-prompt"] == "8"
    assert f["global-batch-size"] == "128"
    assert f["num-rollout"] == "3000"
    assert f["hf-checkpoint"] == "/root/models/Qwen3-4B"
    assert f["swiglu"] is True and f["use-wandb"] is True
    assert f["wandb-mode"] == "offline"
    # flags of `ray job submit` itself are not train flags
    assert "address" not in f and "runtime-env-json" not in f
    assert c.event_lines == 1


def test_bash_set_x_launch_line():
    items, _ = parse(
        "+ ray job submit --address=http://127.0.0.1:8265 -- python3 train.py --rollout-batch-size 16 "
        "--n-samples-per-prompt 4 --global-batch-size 32 --num-steps-per-rollout 2"
    )
    (e,) = events(items, "launch")
    assert e.data["flags"]["rollout-batch-size"] == "16"
    assert e.data["flags"]["n-samples-per-prompt"] == "4"
    assert e.data["flags"]["global-batch-size"] == "32"
    assert e.data["flags"]["num-steps-per-rollout"] == "2"


@pytest.mark.parametrize(
    "line",
    [
        "EXEC: pkill -9 sglang; sleep 3; ray stop --force; pkill -9 ray; pkill -9 python; sleep 3",
        "EXEC: export PYTHONUNBUFFERED=1 && ray start --head --node-ip-address 10.0.0.5 --num-gpus 8 --disable-usage-stats",
        "EXEC: nvidia-smi topo -m",
        "Captured stdout=GPU0 GPU1 stderr=",
        "Job submission server address: http://127.0.0.1:8265",
        "Tailing logs until the job exits (disable with --no-wait):",
        "------------------------ arguments ------------------------",
        "  use_rollout_routing_replay ...................... True",
        "-------------------- end of arguments ---------------------",
        "Creating placement group with 8 GPUs...",
        "  bundle    0, actual_bundle_index:    0, node: 10.0.0.5, gpu: 0",
    ],
)
def test_other_launch_lines_are_not_launch_events(line):
    items, c = parse(line)
    assert events(items, "launch") == []
    assert records(items) == []


@pytest.mark.parametrize(
    "line,name,value",
    [
        ("  rollout_batch_size .............................. 32", "rollout_batch_size", "32"),
        ("  n_samples_per_prompt ............................ 8", "n_samples_per_prompt", "8"),
        ("  global_batch_size ............................... 128", "global_batch_size", "128"),
        ("  num_rollout ..................................... 3000", "num_rollout", "3000"),
        ("  wandb_always_use_train_step ..................... False", "wandb_always_use_train_step", "False"),
    ],
)
def test_megatron_arg_dump_lines(line, name, value):
    items, _ = parse(line)
    (e,) = events(items, "arg")
    assert e.data == {"name": name, "value": value}


# --------------------------------------------------------------------------------------------
# pasted lines, lines with no header
# --------------------------------------------------------------------------------------------


def test_grep_n_prefix():
    r = one_record(
        "4933:(MegatronTrainRayActor pid=32167) [2025-12-17 14:10:28] model.py:649 - step 11: "
        "{'train/loss': -6.05e-09, 'train/step': 11}"
    )
    assert (r.kind, r.n) == ("step", 11)
    assert r.metrics == {"train/loss": -6.05e-09, "train/step": 11}
    assert r.time == "2025-12-17 14:10:28"


def test_grep_n_prefix_with_file_and_ansi():
    r = one_record(
        "run.log:4933:"
        + CYAN
        + "(MegatronTrainRayActor pid=32167)"
        + RESET
        + " [2025-12-17 14:10:28] model.py:649 - step 11: {'train/loss': 0.5, 'train/step': 11}"
    )
    assert r.metrics == {"train/loss": 0.5, "train/step": 11}


@pytest.mark.parametrize("quote", ["> ", ">", "> > "])
def test_markdown_quote_prefix(quote):
    r = one_record(
        quote + "[2026-08-21 10:02:58.903 actor_cell0_rank0] log_utils.py:123 - rollout 3: "
        "{'rollout/raw_reward': 0.4453125}"
    )
    assert (r.kind, r.n) == ("rollout", 3) and r.metrics == {"rollout/raw_reward": 0.4453125}
    assert r.time == "2026-08-21 10:02:58.903"


def test_lines_with_no_header():
    items, c = parse(
        "step 11: {'train/loss': -6.05e-09, 'train/step': 11}",
        "perf 0: {'rollout/response_len/mean': 812.0, 'rollout/zero_std/count_0': 12}",
    )
    recs = records(items)
    assert [(r.kind, r.n) for r in recs] == [("step", 11), ("perf", 0)]
    assert recs[0].metrics == {"train/loss": -6.05e-09, "train/step": 11}
    assert recs[1].metrics == {"rollout/response_len/mean": 812.0, "rollout/zero_std/count_0": 12}
    assert all(r.time is None for r in recs)


def test_headerless_metric_after_prefix_and_logger_text():
    r = one_record("(MegatronTrainRayActor pid=1) INFO:miles.log_utils:step 5: {'train/loss': 0.5, 'train/step': 5}")
    assert (r.kind, r.n) == ("step", 5) and r.metrics == {"train/loss": 0.5, "train/step": 5}


def test_key_lookalike_not_a_metric_kind():
    # 'eval/aime' ends in a metric-kind word: must not start a record
    items, _ = parse("some text eval/step 3: {'a': 1}")
    assert records(items) == []


# --------------------------------------------------------------------------------------------
# wrapped and cut lines
# --------------------------------------------------------------------------------------------

STEP6 = (
    "(MegatronTrainRayActor pid=48790) [2026-08-21 10:03:19.774 actor_cell0_rank0] log_utils.py:542 - step 6: "
    "{'train/loss': -0.00213, 'train/pg_loss': -0.00213, 'train/entropy_loss': 0.0, 'train/pg_clipfrac': 0.00061, "
    "'train/ppo_kl': 2.1e-05, 'train/ess_ratio': 0.9981, 'train/train_rollout_logprob_abs_diff': 0.0118, "
    "'train/train_rollout_kl': 0.00019, 'train/kl_loss': 0.00034, 'train/grad_norm': 0.2144, "
    "'train/lr-pg_0': 1e-06, 'train/lr-pg_1': 1e-06, 'train/step': 6}"
)
STEP6_VALUES = {
    "train/loss": -0.00213,
    "train/pg_loss": -0.00213,
    "train/entropy_loss": 0.0,
    "train/pg_clipfrac": 0.00061,
    "train/ppo_kl": 2.1e-05,
    "train/ess_ratio": 0.9981,
    "train/train_rollout_logprob_abs_diff": 0.0118,
    "train/train_rollout_kl": 0.00019,
    "train/kl_loss": 0.00034,
    "train/grad_norm": 0.2144,
    "train/lr-pg_0": 1e-06,
    "train/lr-pg_1": 1e-06,
    "train/step": 6,
}
RAY6 = "(MegatronTrainRayActor pid=48790) "


def wrap(text: str, width: int) -> list[str]:
    return [text[i : i + width] for i in range(0, len(text), width)]


@pytest.mark.parametrize("width", [40, 57, 80, 100, 120, 133, 200])
@pytest.mark.parametrize("with_prefix", [True, False])
def test_wrapped_at_fixed_column_prefix_on_first_line_only(width, with_prefix):
    text = STEP6 if with_prefix else STEP6[len(RAY6) :]
    chunks = wrap(text, width)
    items, c = parse(
        *chunks, "[2026-08-21 10:03:40.131 actor_cell0_rank0] timer.py:42 - Timer actor_train end (elapsed: 41.5s)"
    )
    (r,) = records(items)
    assert r.metrics == STEP6_VALUES
    assert (r.kind, r.n) == ("step", 6)
    assert not r.cut
    assert r.time == "2026-08-21 10:03:19.774"
    assert r.proc == "actor_cell0_rank0"
    assert c.metric_lines == len(chunks)
    assert c.noise == 1 and c.cut_records == 0


@pytest.mark.parametrize("width", [60, 80, 120])
def test_wrapped_with_prefix_repeated_on_every_line(width):
    body = STEP6[len(RAY6) :]
    chunks = [RAY6 + part for part in wrap(body, width)]
    items, c = parse(*chunks)
    (r,) = records(items)
    assert r.metrics == STEP6_VALUES
    assert r.actor == "MegatronTrainRayActor"
    assert c.metric_lines == len(chunks)


def test_wrapped_lines_interleaved_with_other_pid_does_not_merge():
    chunks = wrap(STEP6, 160)  # the first part holds one complete pair
    other = "(RolloutManager pid=48211) [2026-08-21 10:03:20.000 rollout_manager] metrics.py:89 - perf 4: {'perf/rollout_time': 1.5}"
    items, c = parse(chunks[0], other)
    recs = records(items)
    assert {r.kind for r in recs} == {"step", "perf"}
    perf = next(r for r in recs if r.kind == "perf")
    assert perf.metrics == {"perf/rollout_time": 1.5}
    step = next(r for r in recs if r.kind == "step")
    assert step.cut and step.metrics == {"train/loss": -0.00213, "train/pg_loss": -0.00213}
    assert c.cut_records == 1


def test_cut_line_with_no_complete_pair_is_unreadable():
    items, c = parse(STEP6[: STEP6.index("-0.00213") + 2])
    assert records(items) == []
    assert c.unreadable == 1 and c.metric_lines == 0


def test_pprint_style_multiline_dict():
    lines = [
        "[2026-08-21 10:03:19.774 actor_cell0_rank0] log_utils.py:542 - step 6: {'train/entropy_loss': 0.0,",
        " 'train/grad_norm': 0.2144,",
        " 'train/loss': -0.00213,",
        " 'train/lr-pg_0': 1e-06,",
        " 'train/ppo_kl': 2.1e-05,",
        " 'train/step': 6}",
    ]
    r = one_record(*lines)
    assert r.metrics == {
        "train/entropy_loss": 0.0,
        "train/grad_norm": 0.2144,
        "train/loss": -0.00213,
        "train/lr-pg_0": 1e-06,
        "train/ppo_kl": 2.1e-05,
        "train/step": 6,
    }
    assert not r.cut


def test_pprint_style_with_ray_prefix_on_every_line():
    lines = [
        RAY6 + "[2026-08-21 10:03:19.774 actor_cell0_rank0] log_utils.py:542 - step 6: {'train/entropy_loss': 0.0,",
        RAY6 + " 'train/grad_norm': nan,",
        RAY6 + " 'passrate/pass@1': np.float64(0.4609375),",
        RAY6 + " 'train/step': 6}",
    ]
    r = one_record(*lines)
    assert r.metrics["train/entropy_loss"] == 0.0
    assert math.isnan(r.metrics["train/grad_norm"])
    assert r.nonfinite == {"train/grad_norm": "nan"}
    assert r.metrics["passrate/pass@1"] == 0.4609375
    assert r.metrics["train/step"] == 6


def test_cut_metric_line_at_end_of_file_keeps_complete_pairs():
    items, c = parse(STEP6[: STEP6.index("'train/ppo_kl'") + 5])
    (r,) = records(items)
    assert r.cut
    assert r.metrics == {
        "train/loss": -0.00213,
        "train/pg_loss": -0.00213,
        "train/entropy_loss": 0.0,
        "train/pg_clipfrac": 0.00061,
    }
    assert c.cut_records == 1
    assert c.metric_lines == 1


def test_cut_metric_line_followed_by_other_lines():
    cut = STEP6[: STEP6.index("0.9981") + 3]  # cut inside the number 0.9981
    items, c = parse(
        cut,
        "[2026-08-21 10:03:40.131 actor_cell0_rank0] timer.py:42 - Timer actor_train end (elapsed: 41.5s)",
        "Job 'raysubmit_XXXX' failed",
    )
    (r,) = records(items)
    assert r.cut
    assert r.metrics == {
        "train/loss": -0.00213,
        "train/pg_loss": -0.00213,
        "train/entropy_loss": 0.0,
        "train/pg_clipfrac": 0.00061,
        "train/ppo_kl": 2.1e-05,
    }
    assert c.cut_records == 1
    assert len(events(items, "job_failed")) == 1


def test_cut_metric_line_followed_by_bare_line_does_not_swallow_it():
    cut = STEP6[: STEP6.index("'train/ess_ratio'")]
    items, c = parse(cut, "Job 'raysubmit_XXXX' failed", "  successfully saved checkpoint from iteration 3 to /x")
    (r,) = records(items)
    assert r.cut and r.metrics["train/ppo_kl"] == 2.1e-05 and "train/ess_ratio" not in r.metrics
    assert len(events(items, "job_failed")) == 1
    assert len(events(items, "checkpoint_saved")) == 1
    assert c.metric_lines == 1 and c.event_lines == 2


def test_cut_metric_line_followed_by_bare_metric_line():
    cut = STEP6[: STEP6.index("'train/ess_ratio'") + 3]
    items, _ = parse(cut, "step 7: {'train/loss': 0.00102, 'train/step': 7}")
    recs = records(items)
    assert [(r.kind, r.n, r.cut) for r in recs] == [("step", 6, True), ("step", 7, False)]
    assert recs[1].metrics == {"train/loss": 0.00102, "train/step": 7}


# --------------------------------------------------------------------------------------------
# unreadable / binary, incremental feeding
# --------------------------------------------------------------------------------------------


def test_binary_junk_is_unreadable():
    items, c = parse("\x00\x01\x02garbage\x00", "\ufffd" * 10 + "abc", "plain noise")
    assert items == []
    assert c.unreadable == 2 and c.noise == 1


def test_control_characters_are_removed_from_event_text():
    items, _ = parse("Job 'raysubmit_X' failed\x07\x08")
    (e,) = events(items, "job_failed")
    assert "\x07" not in e.text and "\x08" not in e.text


def test_incremental_feed_matches_whole_parse():
    lines = wrap(STEP6, 90) + ["Job 'raysubmit_X' failed"]
    p = LineParser()
    got = []
    for line in lines:
        got.extend(p.feed(line))
    got.extend(p.flush())
    whole, _ = parse_lines(lines)
    assert [type(i).__name__ for i in got] == [type(i).__name__ for i in whole]
    assert records(got)[0].metrics == STEP6_VALUES
    assert p.counts.lines == len(lines)


def test_flush_closes_open_record_and_is_idempotent():
    p = LineParser()
    assert p.feed(STEP6[:150]) == []
    assert p.has_pending
    out = p.flush()
    assert len(out) == 1 and out[0].cut
    assert p.flush() == []
    assert not p.has_pending


# --------------------------------------------------------------------------------------------
# the sample: every line is accounted for
# --------------------------------------------------------------------------------------------


def test_sample_counts_add_up(sample_lines):
    items, c = parse(*sample_lines)
    assert c.lines == 46
    # perf 3 (RM), rollout 3, step 6 (x2), step 7, perf 3 (trainer), perf 4, eval 19
    assert c.metric_lines == 8
    assert c.records == 8
    assert c.unreadable == 0 and c.cut_records == 0 and c.abridged_records == 0
    assert c.lines == c.metric_lines + c.event_lines + c.noise + c.unreadable
    recs = records(items)
    assert [(r.kind, r.n) for r in recs] == [
        ("perf", 3),
        ("rollout", 3),
        ("step", 6),
        ("step", 6),
        ("step", 7),
        ("perf", 3),
        ("perf", 4),
        ("eval", 19),
    ]
    assert [r.line_no for r in recs] == [4, 8, 9, 10, 11, 13, 14, 35]
    assert recs[0].actor == "RolloutManager" and recs[0].proc == "rollout_manager"
    assert recs[5].source == "train_metric_utils.py"


def test_sample_events(sample_lines):
    items, c = parse(*sample_lines)
    evs = events(items)
    launch = events(items, "launch")
    assert len(launch) == 1 and launch[0].line_no == 1
    assert launch[0].data["flags"]["rollout-batch-size"] == "32"
    assert [e.data["attempt"] for e in events(items, "engine_retry")] == [1, 1, 2]
    (tb,) = events(items, "traceback")
    assert tb.line_no == 37 and len(tb.lines) == 9
    assert tb.data["exception"].startswith("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 7.42 GiB.")
    (ckpt,) = events(items, "checkpoint_saved")
    assert ckpt.data["iteration"] == 19 and ckpt.line_no == 34
    (fail,) = events(items, "ft_fail")
    assert fail.line_no == 36
    assert len(events(items, "health_check_failed")) == 1
    assert events(items, "engines_recovered")[0].data["count"] == 1
    assert len(events(items, "wandb")) == 1 and len(events(items, "tensorboard")) == 1
    assert all("\x1b" not in e.text for e in evs)


def test_sample_dedup_memory_line_and_tqdm(sample_lines):
    # line 18: a deduplicated Memory-Usage line; line 19: the \r-joined tqdm bar -> both noise
    items, c = parse(sample_lines[17], sample_lines[18])
    assert items == [] and c.noise == 2


# --------------------------------------------------------------------------------------------
# the rest of the doc's example lines: never a metric record, only the expected events
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line,kinds",
    [
        (
            "[2026-08-21 10:00:00.000 rollout_manager] inference_rollout_train.py:125 - [rollout] Task raised exception: "
            "HTTPStatusError(\"Server error '503 Service Unavailable' for url 'http://10.0.0.5:3817/generate'\")",
            set(),
        ),
        (
            "RuntimeError: Base model weight sync failed on rollout engine: boom. Check SGLang version compatibility.",
            set(),
        ),
        ("[2026-08-21 10:00:00.000 rollout_manager] x.py:1 - Engine weight version went backwards: 5 -> 4", set()),
        (
            "[2026-08-21 10:00:00.000 actor_cell0_rank0] x.py:1 - Skipping actor-to-rollout weight update because "
            "--debug-skip-weight-update is set.",
            set(),
        ),
        ("[2026-08-21 10:00:00.000 actor_cell0_rank0] x.py:1 - Updating ref model at rollout_id 3", set()),
        (
            "(SGLangEngine pid=1) [2026-08-21 10:00:00 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 3",
            set(),
        ),
        ("ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.", set()),
        ("AssertionError: CI check failed: log_probs (0.1) != ref_log_probs (0.2)", set()),
        ("Rank 3: found NaN in local forward loss calculation", set()),
        ("[2026-08-21 10:00:00.000 rollout_manager] x.py:1 - Killing server engine_indices=[1]...", set()),
        (
            "[2026-08-21 10:00:00.000 rollout_manager] x.py:1 - Timed out after 600s waiting for engines to become ready",
            set(),
        ),
        ("[2026-08-21 10:00:00.000 main] x.py:1 - debug_exit_after_rollout=5 reached at rollout_id=5, exiting", set()),
        ("[2026-08-21 10:00:00.000 main] x.py:1 - Initialising tracking backend: wandb", set()),
        (
            "[2026-08-21 10:00:00.000 main] x.py:1 - Launch router with args: RouterArgs(host='0.0.0.0', port=3817)",
            set(),
        ),
        (
            "[2026-08-21 10:00:00.000 main] x.py:1 - import miles.rollout.sglang_rollout.generate_rollout as "
            "generate_rollout function.",
            set(),
        ),
        ("(SGLangEngine pid=1) [2026-08-21 10:00:00] The server is fired up and ready to roll!", set()),
        ("[2026-08-21 10:00:00.000 actor_cell0_rank0] x.py:1 - Saving model in HuggingFace format to /hf", set()),
        ("[2026-08-21 10:00:00.000 actor_cell0_rank0] x.py:1 - [FSDP] Saved checkpoint to /ckpt/iter_0000019", set()),
        (
            "[2026-08-21 10:00:00.000 main] x.py:1 - Load checkpoint from HuggingFace model into Megatron (path=/hf)",
            set(),
        ),
        ("wandb: 🚀 View run qwen3-4b at: https://wandb.ai/x/y/runs/abc", {"wandb"}),
        (
            "[2026-08-21 10:00:00.000 main] wandb_utils.py:45 - W&B logs will be stored in: /root/wandb",
            {"wandb"},
        ),  # (where its offline runs are)
        (
            "[2026-08-21 10:00:00.000 main] cell.py:300 - ft op=check errored=0 discarded= normal=0 decision=retry "
            'reason="all alive cells failed"',
            set(),
        ),
        (
            "[2026-08-21 10:00:00.000 main] retry_utils.py:34 - retry: attempt 30 failed, giving up (max_attempts=30)",
            set(),
        ),
    ],
)
def test_other_doc_lines(line, kinds):
    items, c = parse(line)
    assert records(items) == []
    assert {e.kind for e in events(items)} <= kinds | {"ft_fail"}
    if kinds:
        assert {e.kind for e in events(items)} >= kinds
