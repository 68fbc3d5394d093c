"""A step stage's iteration being planned (step.py): its residents
(``StepJob``), the plan of one iteration (``Plan``, which gives a resident
its tokens within the budget, growing its memory) and what the stage's
expressions read (``StepContext``).
"""
import math
from typing import TYPE_CHECKING, Any, Dict, Final, List, Optional, Set, Tuple

from .pools import EPS

if TYPE_CHECKING:
    # (in annotations only: a machine integer where mypyc compiles this
    # module, an int elsewhere)
    from mypy_extensions import i64

    from .holds import HoldRun
    from .session import Session
    from .step import Step

INF: Final = math.inf


class StepJob(object):
    """A resident: one `run E prefill|decode (n) [growing P]` of a session."""
    __slots__ = ("session", "decode", "remaining", "grow", "arrived", "gone", "stalled",
                 "pending")

    def __init__(self, session: "Session", decode: bool, work: float,
                 grow: "Optional[Tuple[HoldRun, int]]", now: float) -> None:
        self.session = session
        self.decode = decode
        self.remaining = work
        self.grow = grow  # (HoldRun, pool index) of the growing pool, or None
        self.arrived = now
        self.gone = False
        self.stalled = False
        self.pending = 0.0  # the growth a stalled resident waits for


#: An iteration's assignment: (resident, tokens) in serving order.  Typed
#: tuples, so that compiled code unpacks each pair natively.
Assignment = List[Tuple[StepJob, float]]


class Plan(object):
    """An iteration being planned: the budget B and chunk C read once, what
    is left, the tokens given so far, who was served."""

    def __init__(self, stage: "Step", B: float, C: float) -> None:
        self.stage = stage
        self.B = B
        self.C = C
        self.left = B
        self.served: Set[StepJob] = set()
        self.assigned: Assignment = []
        self.refused = False  # a granule refused a prefill: no more admission
        self.attention: Dict[StepJob, float] = {}  # job -> its prefill chunk's attention term
        self.admitted = 0
        self.prefill_at_start = any([not j.decode for j in stage.residents])

    def preempted(self) -> float:
        return 1.0 if self.stage.preempted_now else 0.0

    def give(self, job: StepJob, exclusive: bool) -> str:
        """Give ``job`` its tokens: "given", "skip", or "self" (it preempted
        itself growing its memory)."""
        stage = self.stage
        # ``b if b < a else a`` is ``min(a, b)`` (the same operand on ties and NaN).
        decode = job.decode
        remaining = job.remaining
        if decode:
            if exclusive and self.prefill_at_start:
                return "skip"
            want = remaining if remaining < 1.0 else 1.0
        else:
            C = self.C
            want = remaining if (C <= 0 or remaining < C) else C
        available = self.B if (exclusive and not decode) else self.left
        # a NaN ``want`` (a prefill of inf tokens given inf: inf - inf left)
        # takes what is available, as 0.1.3's ``min`` does
        tokens = available if (available < want or want != want) else want
        if not decode and stage.granule is not None and tokens < remaining:
            g = stage.granule
            tokens = 0.0 if g == INF else math.floor(tokens / g) * g
            if tokens <= 0:
                self.refused = True
                return "skip"
        if tokens <= 0:
            return "skip"
        if job.grow is not None:
            if job.stalled:
                return "skip"
            run, i = job.grow
            extra = run.pos[i] + tokens - run.alloc[i]
            if extra > EPS:
                outcome = stage.sim.grow_for_step(stage, job, run, i, extra)
                # residents given tokens and preempted meanwhile give them back
                gone = False
                for aj, at in self.assigned:
                    if aj.gone:
                        gone = True
                        break
                if gone:
                    kept: Assignment = []
                    for aj, at in self.assigned:
                        if aj.gone:
                            self.left += at
                        else:
                            kept.append((aj, at))
                    self.assigned = kept
                if outcome == "stalled":
                    return "skip"
                if outcome == "self":
                    return "self"
            if not job.decode:
                self.attention[job] = tokens * (run.pos[i] + tokens / 2.0)
        elif not job.decode:
            self.attention[job] = tokens * tokens / 2.0
        if exclusive and not job.decode:
            self.assigned = []
            self.left = self.B
        self.assigned.append((job, tokens))
        self.left -= tokens
        return "given"


class StepContext(object):
    """What budget, chunk, cost, serve keys and iteration bodies read."""
    __slots__ = ("a", "rng", "nres", "ndec", "kvb", "kvp", "ntok", "npre", "attn",
                 "decoding", "admission", "remaining", "admitted", "preempted", "demand",
                 "served", "arrived", "session", "chosen")

    def __init__(self, rng: Any) -> None:
        self.a: Any = None
        self.rng: Any = rng
        self.chosen: "i64" = 0  # (a choose's member, as etree_choose.choose_least reads its keys)
        self.session: Any = None
        self.nres = 0.0
        self.ndec = 0.0
        self.kvb = 0.0
        self.kvp = 0.0
        self.ntok = 0.0
        self.npre = 0.0
        self.attn = 0.0
        self.decoding = 0.0
        self.admission = 0.0
        self.remaining = 0.0
        self.admitted = 0.0
        self.preempted = 0.0
        self.demand = 0.0
        self.served = 0.0
        self.arrived = 0.0
