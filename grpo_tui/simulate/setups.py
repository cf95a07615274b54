"""The simulated scenarios and training setups: what each broken scenario changes, the setups'
shapes (model, data, K, noise), and the constants of the simulated cluster."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

SCENARIOS: dict[str, str] = {
    "healthy": "reward rises 0.63->0.80, length falls 720->460, gap/KL flat, clipfrac 0",
    "gap-rising": "log-prob gap and KL to engine grow every rollout (x1.12 / x1.25)",
    "gap-jump": "log-prob gap jumps x3 (KL x9) at onset and stays high",
    "grad-norm-rising": "gradient norm grows x1.25 per rollout (learning rate too high)",
    "length-hacking": "length grows 3%/rollout while reward falls 0.01/rollout",
    "off-policy": "clip fraction and ppo_kl above 0 with one update per rollout",
    "rollout-slowdown": "rollout time grows x1.15 per rollout while length stays flat",
    "no-signal": "reward flat at 0.5 and 26+ of 32 groups score all the same",
    "non-finite": "nan/inf grad_norm or loss from onset",
    "crashed": "CUDA OOM traceback at onset (phase=fail), then the log ends",
    "engine-down": "503 retry storm for ~4 minutes, no metric lines after onset",
    "no-steps": "startup lines and noise for 16+ minutes, never a metric line",
    "stalled": "healthy until onset, then only engine health checks for 15 minutes (trainer hung)",
    "kl-ref": "KL to the reference (--use-kl-loss) grows x1.6 per rollout from onset (x100 in 10)",
    "no-update": "gradient norm and loss exactly 0 from onset while groups still disagree (a multi-node bug)",
    "entropy-high": "token entropy jumps to ~9 nats from onset: near-random output (a LoRA/dtype fault)",
}
FORMATS = ("miles", "slime", "level")

GROUPS, PER_GROUP, CAP, GPUS = 32, 8, 1024, 8
BATCH = GROUPS * PER_GROUP
PROMPT_LEN = 145.0
DEFAULT_START = datetime(2026, 8, 21, 9, 50, 2)
ROUTER = "http://10.0.0.5:3817"
CYAN, GREEN, RESET = "\x1b[36m", "\x1b[32m", "\x1b[0m"
DEDUP_NOTE = (
    " (Ray deduplicates logs by default. Set RAY_DEDUP_LOGS=0 to disable log deduplication, or see "
    "https://docs.ray.io/en/master/ray-observability/user-guides/configure-logging.html"
    "#log-deduplication for more options.)"
)
# slime prints the same messages from other call sites (docs/log-format.md §1, §9).
_SLIME_SITES = {
    ("log_utils.py", 542): ("log_utils.py", 460),
    ("model.py", 854): ("model.py", 649),
    ("metrics.py", 89): ("rollout.py", 1193),
    ("log_utils.py", 123): ("log_utils.py", 259),
}
_ENDLESS = {"crashed", "engine-down", "stalled", "no-steps"}  # no clean end of run


@dataclass(frozen=True)
class Setup:
    """One training setup: model, data, batch shape, cap, and how its healthy curves move.

    `manual` is the manual's own setup (docs/contracts.md §4) and keeps the original generator byte
    for byte; every other setup draws its metrics from a small model of a GRPO rollout
    (per-group accuracy ~ Beta, answers ~ Binomial, lengths ~ log-normal under the cap), so
    reward noise, zero-std groups and the cut share hang together the way they do in real runs.
    Seeds of one setup differ in their levels (gap, KL, grad norm, speed) by tens of percent.
    """

    name: str
    what: str
    model: str = "Qwen3-0.6B"
    params: float = 0.6e9
    data: str = "gsm8k/train.parquet"
    groups: int = GROUPS
    per_group: int = PER_GROUP
    cap: int = CAP
    steps_per_rollout: int = 1
    rollouts: int = 48
    layers: tuple[int, int, int, int, int] = (28, 1024, 3072, 16, 8)  # layers, hidden, ffn, heads, kv groups
    # healthy curves: value at rollout 0 -> value at `horizon`, then flat
    reward: tuple[float, float] = (0.625, 0.80)
    length: tuple[float, float] = (720.0, 455.0)
    horizon: float = 47.0
    shape: float = 1.2
    concentration: float = 2.0  # Beta(r c, (1 - r) c) per-prompt accuracy: lower = more zero-std groups
    gap: float = 0.01525
    kl: float = 0.00069
    grad: float = 1.2
    grad_sigma: float = 0.25  # log-scale noise of the gradient norm
    grad_drift: float = 1.0  # healthy multiplicative drift of grad norm over the horizon
    rt_base: float = 20.0  # rollout time = base + per_token x longest answer
    rt_per_token: float = 0.08
    heavy: bool = False  # Student-t noise and isolated spikes
    spike_p: float = 0.0  # chance per step/rollout of an isolated spike
    gap_bump: float = 0.0  # healthy gap step-up (fraction) at a random rollout, then a plateau
    heat: float = 1.0  # healthy rollout-time ramp (factor over 16 rollouts), then a plateau
    entropy: float | None = None  # logged policy entropy at rollout 0 (None: not observed, logged as 0.0)
    # KL to the reference model reached at `horizon` with --use-kl-loss (train/kl_loss; None: not logged)
    kl_ref: float | None = None
    prompt_len: float = PROMPT_LEN
    # chance per seed of a healthy reward dip (0.04-0.12 deep, 8-32 rollouts) while length keeps
    # its curve: long-reasoning runs do this, and it is not length-hacking
    dips: float = 0.0


SETUPS: dict[str, Setup] = {
    s.name: s
    for s in (
        Setup("manual", "the manual's setup: Qwen3-0.6B on GSM8K, 32x8, 1,024-token cap (the default ranges)"),
        Setup(
            "math-7b",
            "7B on MATH: low, slow reward (0.32->0.52), 64x8, 4,096 cap, K=2, small grad norm",
            kl_ref=0.012,
            model="Qwen2.5-7B",
            params=7.6e9,
            data="math/train.parquet",
            groups=64,
            per_group=8,
            cap=4096,
            steps_per_rollout=2,
            rollouts=80,
            layers=(28, 3584, 18944, 28, 4),
            reward=(0.32, 0.52),
            length=(680.0, 610.0),
            horizon=120.0,
            shape=0.8,
            concentration=1.5,
            gap=0.0082,
            kl=0.00034,
            grad=0.17,
            grad_sigma=0.22,
            rt_base=30.0,
            rt_per_token=0.09,
            gap_bump=0.10,
            heat=1.3,
            entropy=0.36,
        ),
        Setup(
            "reasoning-4b",
            "4B on DAPO-style data: long reasoning, length grows 400->1,400 with reward 0.30->0.60",
            kl_ref=0.03,
            model="Qwen3-4B",
            params=4.0e9,
            data="dapo-math-17k/train.parquet",
            groups=32,
            per_group=16,
            cap=8192,
            rollouts=100,
            layers=(36, 2560, 9728, 32, 8),
            reward=(0.30, 0.60),
            length=(400.0, 1400.0),
            horizon=100.0,
            shape=1.0,
            concentration=1.6,
            gap=0.0121,
            kl=0.00052,
            grad=0.30,
            grad_sigma=0.22,
            grad_drift=1.4,
            rt_base=25.0,
            rt_per_token=0.05,
            heat=1.3,
            entropy=0.55,
        ),
        Setup(
            "k4",
            "1.7B on GSM8K with K=4 optimizer steps per rollout (64x8, global batch 128), 2,048 cap",
            model="Qwen3-1.7B",
            params=1.7e9,
            groups=64,
            per_group=8,
            cap=2048,
            steps_per_rollout=4,
            rollouts=60,
            layers=(28, 2048, 6144, 16, 8),
            reward=(0.55, 0.80),
            length=(520.0, 380.0),
            horizon=50.0,
            gap=0.0183,
            kl=0.00081,
            grad=0.62,
            grad_sigma=0.25,
            rt_base=18.0,
            rt_per_token=0.06,
            gap_bump=0.10,
        ),
        Setup(
            "puzzles-3b",
            "3B on logic puzzles: heavy-tailed noise with isolated spikes, reward 0.18->0.45",
            model="Qwen2.5-3B",
            params=3.1e9,
            data="knights-knaves/train.parquet",
            groups=32,
            per_group=8,
            cap=4096,
            rollouts=150,
            layers=(36, 2048, 11008, 16, 2),
            reward=(0.18, 0.45),
            length=(900.0, 700.0),
            horizon=150.0,
            shape=1.3,
            concentration=1.5,
            gap=0.0247,
            kl=0.0011,
            grad=0.45,
            grad_sigma=0.30,
            rt_base=25.0,
            rt_per_token=0.07,
            heavy=True,
            spike_p=0.03,
            heat=1.3,
            entropy=0.48,
        ),
        Setup(
            "plateau",
            "1B on GSM8K: reward saturates at 0.78 after 10 rollouts, length flat, 2,048 cap",
            model="Llama-3.2-1B-Instruct",
            params=1.2e9,
            groups=32,
            per_group=8,
            cap=2048,
            rollouts=120,
            layers=(16, 2048, 8192, 32, 8),
            reward=(0.68, 0.78),
            length=(520.0, 505.0),
            horizon=10.0,
            shape=0.7,
            gap=0.0105,
            kl=0.00047,
            grad=0.85,
            grad_sigma=0.25,
            rt_base=15.0,
            rt_per_token=0.05,
            gap_bump=0.10,
        ),
        Setup(
            "long",
            "0.6B on GSM8K for 240 rollouts, 1,536 cap: slow healthy drifts (gap +10 %, heat x1.3)",
            kl_ref=0.02,
            rollouts=240,
            cap=1536,
            reward=(0.55, 0.85),
            length=(640.0, 420.0),
            horizon=150.0,
            shape=1.0,
            gap=0.0141,
            kl=0.00066,
            grad=1.0,
            grad_sigma=0.28,
            grad_drift=1.3,
            rt_base=12.0,
            rt_per_token=0.06,
            gap_bump=0.10,
            heat=1.3,
        ),
        Setup(
            "reasoning-8b",
            "8B on AIME-style data: length grows 1,000->3,500 with reward 0.20->0.45, reward dips while length grows",
            kl_ref=0.03,
            model="Qwen3-8B",
            params=8.2e9,
            data="aime-style/train.parquet",
            groups=32,
            per_group=8,
            cap=16384,
            rollouts=160,
            layers=(36, 4096, 12288, 32, 8),
            reward=(0.20, 0.45),
            length=(1000.0, 3500.0),
            horizon=150.0,
            shape=1.0,
            concentration=1.4,
            gap=0.0104,
            kl=0.00046,
            grad=0.26,
            grad_sigma=0.22,
            grad_drift=1.3,
            rt_base=40.0,
            rt_per_token=0.03,
            heat=1.3,
            entropy=0.52,
            dips=0.8,
        ),
        Setup(
            "distill-1.5b",
            "1.5B R1-distill on math, K=2: length grows 2,000->4,800 with reward 0.28->0.42 under an 8,192 cap, reward dips",
            model="DeepSeek-R1-Distill-Qwen-1.5B",
            params=1.8e9,
            data="deepscaler/train.parquet",
            groups=64,
            per_group=8,
            cap=8192,
            steps_per_rollout=2,
            rollouts=120,
            layers=(28, 1536, 8960, 12, 2),
            reward=(0.28, 0.42),
            length=(2000.0, 4800.0),
            horizon=120.0,
            shape=0.9,
            concentration=1.6,
            gap=0.0139,
            kl=0.00061,
            grad=0.40,
            grad_sigma=0.25,
            grad_drift=1.2,
            rt_base=30.0,
            rt_per_token=0.04,
            entropy=0.60,
            dips=0.8,
        ),
    )
}


def _check_scenario(scenario: str) -> None:
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; choose from {', '.join(SCENARIOS)}")


def setup_of(name: str) -> Setup:
    """The named setup, or ValueError listing the known ones."""
    if name not in SETUPS:
        raise ValueError(f"unknown setup {name!r}; choose from {', '.join(SETUPS)}")
    return SETUPS[name]


def onset_of(scenario: str, rollouts: int, onset: int | None = None) -> int | None:
    """Rollout id where the break starts, so tests and demos know where alerts belong."""
    _check_scenario(scenario)
    if scenario == "healthy":
        return None
    if scenario == "no-steps":
        return 0
    return max(0, int(onset)) if onset is not None else rollouts // 3
