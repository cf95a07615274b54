"""One simulated run's timeline, chunk by chunk: start-up, one chunk per rollout, and each
scenario's ending (a crash, a dead engine, a stall, or the job's success)."""

from __future__ import annotations

import math
from collections.abc import Iterator

from .series import _rng, _rollout_series, _setup_rollout_series, _setup_step_series, _step_series
from .setups import _ENDLESS, DEFAULT_START, GPUS, ROUTER, SETUPS, Setup, _check_scenario, onset_of, setup_of
from .text import (
    _Chunk,
    _filler,
    _Log,
    _memory,
    _rm_perf,
    _step_dict,
    _timer,
    _timings,
    _tqdm,
    _train_perf,
    _train_rollout,
)


class _Run:
    """Walks the timeline of one simulated run and yields it chunk by chunk."""

    def __init__(self, scenario, rollouts, seed, K, fmt, noise, onset, start, su: Setup | None = None, pace=1.0):
        _check_scenario(scenario)
        if K < 1 or rollouts < 0 or noise < 0:
            raise ValueError("steps_per_rollout >= 1, rollouts >= 0 and noise_per_rollout >= 0 required")
        if not pace > 0:
            raise ValueError("pace must be > 0")
        self.su = su = su or SETUPS["manual"]
        self.sc, self.n, self.seed, self.K, self.noise = scenario, rollouts, seed, K, noise
        self.onset = onset_of(scenario, rollouts, onset)
        self.L = _Log(fmt, start or DEFAULT_START, seed)
        if su.name == "manual":
            self.v = _rollout_series(scenario, rollouts, seed, self.onset, pace)
            self.st = _step_series(scenario, rollouts, K, seed, self.onset, pace)
        else:
            self.v = _setup_rollout_series(su, scenario, rollouts, seed, self.onset, pace)
            self.st = _setup_step_series(su, scenario, rollouts, K, seed, self.onset, pace)
        self.v["su"] = su  # type: ignore[assignment]  # (the series' dict also carries its setup)
        self.t = 0.0
        self.prev = {"sleep": 2.1, "update": 3.4}
        self.train_end = 140.0  # the trainer is ready after the initial weight sync

    # -- startup ---------------------------------------------------------------

    def exec_line(self) -> str:
        su = self.su
        batch = su.groups * su.per_group
        gbs = batch // self.K
        extra = f" --num-steps-per-rollout {self.K}" if batch % self.K else ""
        if su.kl_ref is not None or self.sc == "kl-ref":
            extra += " --use-kl-loss --kl-loss-coef 0.001"
        nl, hid, ffn, heads, kv = su.layers
        env = (
            '{"env_vars": {"PYTHONUNBUFFERED": "1", "CUDA_DEVICE_MAX_CONNECTIONS": "1", "NCCL_NVLS_ENABLE": "1", '
            '"no_proxy": "127.0.0.1,127.0.0.1", "MASTER_ADDR": "127.0.0.1", '
            '"PYTHONPATH": "/root/Megatron-LM:/root/miles"}}'
        )
        return (
            "EXEC: export no_proxy=127.0.0.1 && export PYTHONUNBUFFERED=1 && ray job submit "
            f"--address=\"http://127.0.0.1:8265\" --runtime-env-json='{env}' -- python3 /root/miles/train.py "
            f"--swiglu --num-layers {nl} --hidden-size {hid} --ffn-hidden-size {ffn} --num-attention-heads {heads} "
            f"--group-query-attention --num-query-groups {kv} --kv-channels 128 --qk-layernorm "
            f"--hf-checkpoint /root/models/{su.model} --ref-load /root/models/{su.model}_torch_dist "
            f"--prompt-data /root/datasets/{su.data} --input-key messages --label-key label "
            "--apply-chat-template --rollout-shuffle --rm-type math "
            f"--num-rollout {self.n} --rollout-batch-size {su.groups} --n-samples-per-prompt {su.per_group} "
            f"--rollout-max-response-len {su.cap} --rollout-temperature 1.0 --global-batch-size {gbs}{extra} "
            "--advantage-estimator grpo --lr 1e-6 --actor-num-nodes 1 --actor-num-gpus-per-node 8 --colocate "
            "--rollout-num-gpus-per-engine 1 --save-interval 20 --use-wandb --wandb-mode offline"
        )

    def startup(self) -> list[tuple[float, str]]:
        """EXEC, W&B and tensorboard lines always; the rest of start-up only with noise on."""
        L, ch = self.L, _Chunk()
        ch.add(0.0, (L.t0, self.exec_line()))
        ch.add(
            9.402, L.log(9.402, "main", ("wandb_utils.py", 38), "W&B offline mode enabled. Data will be saved locally.")
        )
        stamp = L.when(9.95).strftime("%Y%m%d_%H%M%S")
        ch.add(
            9.95,
            L.log(
                9.95, "main", ("tensorboard_utils.py", 44), f"Saving tensorboard log to tensorboard_log/miles/{stamp}."
            ),
        )
        self.t = 150.0
        if self.noise:
            self._startup_noise(ch)
        return ch.lines(None)

    def _startup_noise(self, ch: _Chunk) -> None:
        L = self.L
        w = L.when(2.114)
        ch.add(
            2.114,
            (
                L.t0 + 2.114,
                f"{w:%Y-%m-%d %H:%M:%S},114\tINFO worker.py:1942 -- Connected to Ray cluster. "
                "View the dashboard at http://127.0.0.1:8265 ",
            ),
            1,
        )
        su = self.su
        args = {
            "advantage_estimator": "grpo",
            "global_batch_size": su.groups * su.per_group // self.K,
            "lr": "1e-06",
            "n_samples_per_prompt": su.per_group,
            "num_rollout": self.n,
            "rollout_batch_size": su.groups,
            "rollout_max_response_len": su.cap,
            "save_interval": 20,
            "use_wandb": "True",
        }
        dump = ["------------------------ arguments ------------------------"]
        dump += [f"  {k} {'.' * (48 - len(k))} {val}" for k, val in args.items()]
        dump.append("-------------------- end of arguments ---------------------")
        for i, text in enumerate(dump):
            ch.add(10.5 + i * 1e-3, (L.t0 + 10.5 + i * 1e-3, text), 1)
        ch.add(
            12.0, L.log(12.0, "main", ("placement_group.py", 96), f"Creating placement group with {GPUS} GPUs..."), 1
        )
        for g in range(GPUS):
            t = 13.0 + g * 1e-3
            ch.add(
                t,
                L.log(
                    t,
                    "main",
                    ("placement_group.py", 131),
                    f"  bundle {g:4d}, actual_bundle_index: {g:4d}, node: 10.0.0.5, gpu: {g}",
                ),
                1,
            )
        ch.add(
            20.3,
            L.log(
                20.3,
                "rm",
                ("router_manager.py", 61),
                "Launch router with args: RouterArgs(host='10.0.0.5', port=3817, policy='cache_aware')",
            ),
            1,
        )
        ch.add(22.8, L.log(22.8, "rm", ("router_manager.py", 88), "Router launched at 10.0.0.5:3817"), 1)
        for e in range(GPUS):
            t = 95.0 + 2.3 * e
            ch.add(t, L.sglang(t, e, "The server is fired up and ready to roll!"), 1)
        ch.add(
            118.4,
            L.log(
                118.4,
                "rm",
                ("rollout.py", 54),
                "import miles.rollout.sglang_rollout.generate_rollout as generate_rollout function.",
            ),
            1,
        )
        ch.add(
            131.2,
            L.log(
                131.2,
                "rank0",
                ("tensorboard_utils.py", 44),
                f"Saving tensorboard log to tensorboard_log/miles/{L.when(131.2):%Y%m%d_%H%M%S}.",
            ),
            1,
        )
        self._update_lines(ch, 140.0, self.prev["update"], None, 1)

    # -- one rollout -----------------------------------------------------------

    def rollout(self, i: int) -> list[tuple[float, str]]:
        """Generation, the four metric kinds, the training timers and the weight update."""
        L, v, ch = self.L, self.v, _Chunk()
        nrng = _rng(self.seed, 5, i)
        t0, rt = self.t, float(v["rollout_time"][i])
        gen_end = t0 + rt
        self._generation(ch, nrng, t0, gen_end, i)
        t = gen_end + 0.25
        ch.add(t, L.log(t, "rm", ("metrics.py", 89), f"perf {i}: {_rm_perf(v, i)}"))
        tm = _timings(self.seed, i, float(v["length"][i]), self.su.prompt_len)
        tm["prev_sleep"], tm["prev_update"] = self.prev["sleep"], self.prev["update"]
        t = self._train(ch, i, t, tm)
        if not (self.sc == "crashed" and i == self.onset):
            self.prev = {"sleep": tm["sleep"], "update": tm["update"]}
            self.t = self._offload_and_update(ch, i, t, tm) + 0.3
        fill = max(self.noise // 3, self.noise - self._noise_count(ch))
        _filler(L, ch, nrng, t0 + 1, gen_end - 1, fill)
        return ch.lines(self.noise)

    @staticmethod
    def _noise_count(ch: _Chunk) -> int:
        return sum(1 for e in ch.events if 0 < e[1] < 9)

    def _generation(self, ch: _Chunk, rng, t0: float, gen_end: float, i: int) -> None:
        L = self.L
        t = t0 + 0.4 * (gen_end - t0)
        ch.add(
            t,
            L.sglang(
                t,
                int(rng.integers(GPUS)),
                f'INFO:     10.0.0.5:{int(rng.integers(40000, 60000))} - "GET /health HTTP/1.1" 200 OK',
            ),
            5,
        )
        t = gen_end - 0.02
        ch.add(t, L.bare(t, "rm", _tqdm("Rollout generation", self.su.groups * self.su.per_group, gen_end - t0)), 1)

    def _train(self, ch: _Chunk, i: int, t: float, tm: dict) -> float:
        """From `ft op=train phase=start` to the trainer `perf N:` line (or the crash)."""
        L, K = self.L, self.K
        t += 0.16
        ch.add(t, L.log(t, "main", ("group.py", 147), f"ft op=train phase=start rollout={i} attempt=0"), 1)
        t += 0.002
        ch.add(t, L.log(t, "main", ("cell.py", 229), "ft op=execute phase=start cell=0 fn=train n_actors=8"), 3)
        exec_start = t
        t += 0.4
        ch.add(t, _timer(L, t, "wake_up"), 6)
        t += tm["wake"]
        ch.add(t, _timer(L, t, "wake_up", tm["wake"]), 6)
        ch.add(t + 0.01, _memory(L, t + 0.01, "rank0", "after wake_up model", 70.3), 4)
        ch.add(t + 0.016, L.dedup(_memory(L, t + 0.016, "rank7", "after wake_up model", 70.41)), 2)
        t += 0.05
        train_wait = t - self.train_end
        ch.add(t, _timer(L, t, "train_wait", train_wait), 2)
        crash = self.sc == "crashed" and i == self.onset
        for name in ("data_preprocess", "ref_log_probs", "log_probs")[: 2 if crash else 3]:
            dur = tm[{"data_preprocess": "prep", "ref_log_probs": "ref", "log_probs": "logp"}[name]]
            ch.add(t + 0.01, _timer(L, t + 0.01, name), 7)
            t += dur
            ch.add(t, _timer(L, t, name, dur), 6)
        if self.sc == "crashed" and i == self.onset:
            self._crash(ch, i, t, exec_start)
            return t
        t += 0.3
        ch.add(t, L.log(t, "rank0", ("log_utils.py", 123), f"rollout {i}: {_train_rollout(self.v, i)}"))
        t += 0.02
        ch.add(t, _timer(L, t, "actor_train"), 4)
        a0 = t
        for j in range(K):
            s = i * K + j
            ts = a0 + tm["actor"] * (j + 1) / K - 0.03
            valid = "true" if math.isfinite(self.st["grad"][s]) and math.isfinite(self.st["loss"][s]) else "false"
            ch.add(
                ts,
                L.log(
                    ts,
                    "rank0",
                    ("model.py", 635),
                    f"ft op=train_step rollout={i} step={j} attempt=0 outcome=NORMAL valid_step={valid}",
                ),
                5,
            )
            d = _step_dict(self.st, s)
            ch.add(ts + 0.01, L.log(ts + 0.01, "rank0", ("log_utils.py", 542), f"step {s}: {d}"))
            ch.add(ts + 0.01, L.log(ts + 0.01, "rank0", ("model.py", 854), f"step {s}: {d}"))
        t = a0 + tm["actor"]
        ch.add(t, _timer(L, t, "actor_train", tm["actor"]), 3)
        self.train_end = t
        t += 0.27
        tokens = self.su.groups * self.su.per_group * (float(self.v["length"][i]) + float(self.v["prompt"][i]))
        perf = _train_perf(tm, train_wait, tokens, self.su.params)
        ch.add(t, L.log(t, "rank0", ("train_metric_utils.py", 56), f"perf {i}: {perf}"))
        t += 0.1
        ch.add(
            t,
            L.log(
                t,
                "main",
                ("cell.py", 247),
                f"ft op=execute phase=end cell=0 fn=train ok=true elapsed_s={t - exec_start:.1f}",
            ),
            4,
        )
        return t

    def _offload_and_update(self, ch: _Chunk, i: int, t: float, tm: dict) -> float:
        L = self.L
        t += 0.2
        ch.add(t, _memory(L, t, "rank0", "before offload model", 9.8), 7)
        t += tm["sleep"]
        if (i + 1) % 20 == 0 and self.noise:
            t = self._checkpoint(ch, i, t)
        return self._update_lines(ch, t, tm["update"], i, 0)

    def _update_lines(self, ch: _Chunk, t: float, dur: float, i: int | None, bump: int) -> float:
        """The weight sync after training (or the initial sync at start-up, rollout=)."""
        L = self.L
        p = lambda k: k + bump
        ch.add(
            t,
            L.log(t, "main", ("group.py", 257), f"ft op=update_weights phase=start rollout={'' if i is None else i}"),
            p(1),
        )
        t += 0.2
        ch.add(
            t,
            L.log(t, "rank0", ("structured_log.py", 23), "ft cls=MegatronTrainRayActor fn=update_weights phase=start"),
            p(1),
        )
        ch.add(t + 0.001, _timer(L, t + 0.001, "update_weights"), p(5))
        ch.add(t + 0.18, _memory(L, t + 0.18, "rank0", "before update_weights", 69.9), p(4))
        ch.add(t + 0.186, L.dedup(_memory(L, t + 0.186, "rank7", "before update_weights", 70.02)), p(2))
        for k, path in enumerate(("/pause_generation", "/flush_cache", "/update_weights_from_tensor")):
            tt = t + 0.3 + 0.1 * k
            ch.add(
                tt,
                L.sglang(tt, k, f'INFO:     10.0.0.5:{51234 + k} - "POST {path} HTTP/1.1" 200 OK'),
                p(7 if k < 2 else 6),
            )
        t += dur
        ch.add(t - 0.2, L.bare(t - 0.2, "rank0", _tqdm("Update weights", 29, dur - 0.5)), p(3))
        ch.add(t, _timer(L, t, "update_weights", dur), p(3))
        ch.add(
            t + 0.001,
            L.log(
                t + 0.001,
                "rank0",
                ("structured_log.py", 27),
                f"ft cls=MegatronTrainRayActor fn=update_weights phase=end ok=true elapsed_s={dur:.1f}",
            ),
            p(1),
        )
        ch.add(
            t + 0.05,
            L.sglang(t + 0.05, 0, 'INFO:     10.0.0.5:51240 - "POST /continue_generation HTTP/1.1" 200 OK'),
            p(6),
        )
        return t + 0.1

    def _checkpoint(self, ch: _Chunk, i: int, t: float) -> float:
        """Megatron save every 20 rollouts: Timer lines plus bare rank-0 prints."""
        L = self.L
        ch.add(t, _timer(L, t, "save_model"), 8)
        where = f"/root/shared_data/checkpoints/{self.su.model.lower()}-grpo"
        ch.add(
            t + 0.5,
            L.bare(t + 0.5, "rank0", f"saving checkpoint at iteration {i:7d} to {where} in torch_dist format"),
            8,
        )
        t += 6.0
        ch.add(
            t - 0.1,
            L.bare(
                t - 0.1, "rank0", f"  successfully saved checkpoint from iteration {i:7d} to {where} [ t 1/1, p 1/1 ]"
            ),
            8,
        )
        ch.add(t, _timer(L, t, "save_model", 6.0), 8)
        return t + 0.1

    # -- endings ---------------------------------------------------------------

    def _crash(self, ch: _Chunk, i: int, t: float, exec_start: float) -> None:
        """OOM in train_actor: the actor's ok=false traceback, then the driver's phase=fail one."""
        L, pid = self.L, self.L.pids["rank"]
        oom = (
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 7.42 GiB. GPU 0 has a total capacity "
            f"of 79.19 GiB of which 1.05 GiB is free. Process {pid} has 78.12 GiB memory in use. Of the allocated "
            "memory 71.80 GiB is allocated by PyTorch, and 4.90 GiB is reserved by PyTorch but unallocated."
        )
        t += 9.7
        ch.add(
            t,
            L.log(
                t,
                "rank0",
                ("structured_log.py", 29),
                f"ft cls=MegatronTrainRayActor fn=train phase=end ok=false elapsed_s={t - exec_start:.1f}",
                "ERROR",
            ),
        )
        frames = [
            "Traceback (most recent call last):",
            '  File "/root/miles/miles/utils/tracking_utils/structured_log.py", line 61, in wrapper',
            "    return fn(self, *args, **kwargs)",
            '  File "/root/miles/miles/backends/megatron_utils/actor.py", line 398, in train',
            '    rollout_data["log_probs"] = self.compute_log_prob(',
            "                                ^^^^^^^^^^^^^^^^^^^^^^",
            '  File "/root/miles/miles/backends/megatron_utils/model.py", line 311, in forward_only',
            "    output_tensor = model(**batch)",
            oom,
        ]
        for k, text in enumerate(frames):
            ch.add(t + 1e-4 * (k + 1), L.bare(t, "rank0", text))
        t += 0.3
        ch.add(
            t,
            L.dedup(
                L.log(
                    t,
                    "rank7",
                    ("structured_log.py", 29),
                    f"ft cls=MegatronTrainRayActor fn=train phase=end ok=false elapsed_s={t - exec_start:.1f}",
                    "ERROR",
                )
            ),
        )
        t += 0.5
        ch.add(
            t,
            L.log(
                t,
                "main",
                ("cell.py", 251),
                f"ft op=execute phase=fail cell=0 fn=train elapsed_s={t - exec_start:.1f}",
                "ERROR",
            ),
        )
        main = [
            "Traceback (most recent call last):",
            '  File "/root/miles/miles/ray/train/cell.py", line 234, in _execute_raw',
            "    result = await asyncio.gather(",
            "             ^^^^^^^^^^^^^^^^^^^^^",
            f"ray.exceptions.RayTaskError(OutOfMemoryError): ray::MegatronTrainRayActor.train() (pid={pid}, "
            "ip=10.0.0.5, actor_id=8e1f0c2b7a4d5e6f9a0b1c2d01000000, repr=<miles.backends.megatron_utils.actor."
            "MegatronTrainRayActor object at 0x7f3b2c1d5e80>)",
            '  File "/root/miles/miles/backends/megatron_utils/actor.py", line 398, in train',
            '    rollout_data["log_probs"] = self.compute_log_prob(',
            "                                ^^^^^^^^^^^^^^^^^^^^^^",
            oom,
        ]
        for k, text in enumerate(main):
            ch.add(t + 1e-4 * (k + 1), L.bare(t, "main", text))
        self._retries(ch, i, t + 0.4)

    def _retries(self, ch: _Chunk, i: int, t: float) -> None:
        L = self.L
        ch.add(t, L.log(t, "main", ("cell.py", 262), "execute_all_alive_and_catch#train error index=0", "WARNING"))
        ch.add(t + 0.2, L.log(t + 0.2, "main", ("cell.py", 301), "ft op=confirm_dead phase=start cell=0 n_actors=8"))
        ch.add(
            t + 1.1,
            L.log(
                t + 1.1,
                "main",
                ("group.py", 212),
                'ft op=check errored=0 discarded= normal=0 decision=retry reason="all alive cells failed"',
            ),
        )
        t += 3.1
        for k in (1, 2):
            ch.add(
                t,
                L.log(
                    t,
                    "main",
                    ("retry_utils.py", 36),
                    f"retry: attempt {k} failed, retrying in {2.0 ** (k - 1):.1f}s",
                    "WARNING",
                ),
            )
            t += 2.0 ** (k - 1) + 0.01
            ch.add(t, L.log(t, "main", ("group.py", 147), f"ft op=train phase=start rollout={i} attempt={k}"))
            t += 0.05
            if k == 1:
                ch.add(
                    t,
                    L.log(
                        t, "main", ("cell.py", 251), "ft op=execute phase=fail cell=0 fn=train elapsed_s=0.0", "ERROR"
                    ),
                )
                ch.add(t + 1e-4, L.bare(t, "main", "AssertionError: Cannot recover when all cells are dead"))
                t += 0.2

    def engine_down(self, i: int) -> Iterator[list[tuple[float, str]]]:
        """Rollout `i` starts generating, the engine dies, and 503 retries run for ~4 minutes."""
        L, rng = self.L, _rng(self.seed, 6, i)
        t0 = self.t
        ch = _Chunk()
        _filler(L, ch, rng, t0 + 1, t0 + 25, min(self.noise, 8))
        t = t0 + 27.3
        ch.add(
            t,
            L.sglang(
                t,
                1,
                f'INFO:     10.0.0.5:{int(rng.integers(40000, 60000))} - "GET /health HTTP/1.1" 503 Service Unavailable',
            ),
            5,
        )
        ch.add(
            t + 8.7,
            L.log(
                t + 8.7,
                "rm",
                ("health_monitor.py", 154),
                "Health check failed for rollout engine 1 (ray timeout or error). Killing actor. "
                "Exception: The actor died unexpectedly before finishing this task.",
                "ERROR",
            ),
        )
        yield ch.lines(self.noise)
        url = f"{ROUTER}/generate"
        for req in range(4):
            ch = _Chunk()
            start = t0 + 30.0 + 55.0 * req
            for k in range(1, 61):
                tt = start + (k - 1) * 1.003 + 0.002 * req
                ch.add(
                    tt,
                    L.log(
                        tt,
                        "rm",
                        ("http_utils.py", 226),
                        f"Error: Server error '503 Service Unavailable' for url '{url}'",
                    ),
                )
                ch.add(
                    tt,
                    L.bare(
                        tt,
                        "rm",
                        "For more information check: https://developer.mozilla.org/en-US/docs/Web/"
                        f"HTTP/Status/503, retrying... (attempt {k}/60, url={url}, response=No available workers)",
                    ),
                )
                if k % 15 == 7:
                    ch.add(
                        tt + 0.4,
                        L.sglang(
                            tt + 0.4, 1, 'INFO:     10.0.0.5:51990 - "GET /health HTTP/1.1" 503 Service Unavailable'
                        ),
                        5,
                    )
            tt = start + 60 * 1.003
            ch.add(tt, L.log(tt, "rm", ("http_utils.py", 230), f"Max retries (60) reached, failing... (url={url})"))
            yield ch.lines(self.noise)

    def stalled(self) -> list[tuple[float, str]]:
        """A few dwindling decode lines after the last rollout, then only the engines' health
        checks for 15 minutes: the trainer hangs (an NCCL wait) while the engines stay up."""
        ch, rng = _Chunk(), _rng(self.seed, 7, 0)
        _filler(self.L, ch, rng, self.t + 2, self.t + 150, min(self.noise, 5))
        minutes = 15
        if self.su.name != "manual" and self.onset:
            # a hang outlasts this setup's own rollout interval several times over
            minutes = max(15, math.ceil(6 * (self.t - 150.0) / self.onset / 60))
        for minute in range(1, minutes + 1):
            t = self.t + 150 + 60 * minute
            ch.add(t, self.L.sglang(t, 0, 'INFO:     10.0.0.5:41000 - "GET /health HTTP/1.1" 200 OK'), 5)
        return ch.lines(None)

    def no_steps(self) -> Iterator[list[tuple[float, str]]]:
        """Engines never come up: `wait_all_engines_alive looping...` every 30 s for 16.5 minutes."""
        L = self.L
        for minute in range(17):
            ch = _Chunk()
            for half in range(2):
                t = 150.0 + 60 * minute + 30 * half
                if t > 150.0 + 990:
                    break
                ch.add(t, L.log(t, "rm", ("server_group.py", 118), "wait_all_engines_alive looping..."))
                for e in range(min(self.noise // 4, GPUS)):
                    tt = t + 3 + e * 0.7
                    ch.add(
                        tt,
                        L.sglang(
                            tt, e, f'INFO:     10.0.0.5:{41000 + e} - "GET /health HTTP/1.1" 503 Service Unavailable'
                        ),
                        5,
                    )
            yield ch.lines(None)

    def finish(self) -> list[tuple[float, str]]:
        """Clean end of a completed run: final save and Ray's success box (only with noise on)."""
        if not self.noise:
            return []
        ch, t, L = _Chunk(), self.t + 1, self.L
        t = self._checkpoint(ch, self.n - 1, t) if self.n % 20 else t
        for k, text in enumerate(["-" * 40, "Job 'raysubmit_8fQz2nLq1cVhXw3T' succeeded", "-" * 40]):
            ch.add(t + 5 + k * 1e-3, (L.t0 + round(t + 5 + k * 1e-3, 3), text))
        return ch.lines(None)


def _chunks(
    scenario, rollouts, seed, K, fmt, noise, onset, start, setup="manual", pace=1.0
) -> Iterator[list[tuple[float, str]]]:
    """The log as chunks: start-up, one per rollout, then the scenario's ending."""
    run = _Run(scenario, rollouts, seed, K, fmt, noise, onset, start, setup_of(setup), pace)
    yield run.startup()
    if scenario == "no-steps":
        yield from run.no_steps()
        return
    stop = rollouts if run.onset is None or scenario not in _ENDLESS else min(run.onset, rollouts)
    for i in range(stop):
        yield run.rollout(i)
    if scenario in _ENDLESS and run.onset is not None and run.onset < rollouts:
        if scenario == "crashed":
            yield run.rollout(run.onset)
        elif scenario == "engine-down":
            yield from run.engine_down(run.onset)
        elif scenario == "stalled":
            yield run.stalled()
        return
    yield run.finish()
