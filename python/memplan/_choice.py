"""Which candidates fit measures, and which measured fit it returns.

fit's goal is the fastest step within the budget.  Each candidate's first
timing (measure_step: the least of two steps, taken right after that
candidate's own warm-up) is made minutes apart from the others', so a
change in the machine's load between them moves the comparison as much
as the plans do (ResNet-50 at batch 16, 2 cores: the same plan timed
3.41 s and 3.71 s in two runs of one benchmark).  The measured fits whose
first timings are close, and those ranked before the fastest (expected
faster), are therefore timed again side by side (retime: A B, B A, A B
...), each step paired with the other's in the same round.  One is
faster only where it is faster in every round (and by more than TIE in
the median round); otherwise the steps are
indistinguishable on this machine, and the better ranked plan (the least
forward seconds with its recomputation, as measured at capture) is
returned: memory within the budget is worth nothing, and ranking is the
expected faster, where the least memory was the expected slower (it
recomputes more: ResNet-50's k=8 shape, 59.5 MiB smaller, about 5% slower;
the LSTM's chunked k=4 shape 3.6%, docs/python.md).  Measured
(ResNet-50 at batch 16 under a load of 5 on 2 cores; docs/python.md, "fit's
choice"): one module timed
against itself in 6 interleaved rounds gave per-round ratios 0.54-1.21,
median 0.88, so a median rule with any threshold under 12% would have
called a plan faster than itself; the sign rule called it a tie.
"""

import time

from ._fx import as_tuple, frozen
from ._measure import _step, _zero_grads, default_loss, device_of, sync

NEAR = 0.15      # first timings within 15% of the fastest: timed again side by side
FINALISTS = 3    # at most this many of them
ROUNDS = 3       # rounds of one step each, the order reversed every other round
TIE = 0.01       # faster in every round by less than 1% in the median: a tie anyway


def next_trial(order, fits, ok, near=None):
    """The next candidate to measure: the best ranked one that ok() allows,
    of the model as written while one of its plans may fit (the time-chunked
    variants, the fastest ranked first, only where none does), once one
    fits of that one's variant; after a measured fit that is not a
    checkpoint_sequential shape, the best such shape if one may fit (so
    that fit is never slower than checkpoint_sequential where a measured
    step can tell).  near(): a plan that misses the budget by less than
    the estimate's error; one ranked before that pick, of the model as
    written while nothing fits (else of the fits' variant, and a
    checkpoint_sequential shape where one is due and may fit), is
    measured instead (None: none).  ok() and near() run only on
    candidates that could still be picked (they may place a plan on its
    timeline)."""
    seq = bool(fits) and not any(f[3].kind == "sequential" for f in fits)
    best, tier = None, None
    for c in order:
        if fits and c.variant != fits[0][3].variant:
            continue
        here = (bool(c.variant) and not fits, seq and c.kind != "sequential")
        if (tier is None or here < tier) and ok(c):
            best, tier = c, here
            if not any(here):
                break
    if best is None or near is None:
        return best
    variant = fits[0][3].variant if fits else 0
    seq = seq and best.kind == "sequential"     # else no shape may fit: any near one
    for c in order:
        if c is best:
            break
        if c.variant == variant and (not seq or c.kind == "sequential") and near(c):
            return c
    return best


def finalists(fits):
    """The measured fits (seconds, rank, peak, candidate, module) to time
    again side by side, fastest first, at most FINALISTS: the fastest one,
    those whose first timing is within NEAR of it, and those ranked before
    it (they recompute less, so a slower first timing contradicts their
    plan: one noisy step must not decide it; ResNet-50 b16 at 1/3 on the
    quiet machine: the 6-run plan's first timing came out 13-16% under
    the 9-run plan's in three fits, 4.57 s against 5.28 s once, just
    outside NEAR, so a noisy step the other way would have left the
    better plan out).  The others rank after the fastest and are slower
    than any noise seen here."""
    ranked = sorted(fits, key=lambda f: (f[0], f[1]))
    w = ranked[0]
    return [f for f in ranked if f[0] <= w[0] * (1 + NEAR) or f[1] < w[1]][:FINALISTS]


def retime(modules, inputs, loss_fn=None, rounds=ROUNDS, clock=time.perf_counter):
    """Seconds of `rounds` training steps of each module, interleaved: round
    r steps every module once, in the given order when r is even, reversed
    when odd (A B, B A, A B: a load that grows or fades within a round
    favours neither).  times[i][r] is module i's step in round r.  The
    modules share their parameters (fit's rebuilds of one model), which are
    given back exactly as they were, gradients and modes too."""
    inputs, loss_fn = as_tuple(inputs), loss_fn or default_loss
    times = [[] for _ in modules]
    device = device_of(modules[0], inputs)
    modes = [m.training for m in modules]
    with frozen(modules[0]):
        try:
            for m in modules:
                m.train()
            for r in range(rounds):
                order = range(len(modules)) if r % 2 == 0 else reversed(range(len(modules)))
                for i in order:
                    _zero_grads(modules[i])
                    sync(device)
                    t0 = clock()
                    _step(modules[i], inputs, loss_fn)
                    sync(device)
                    times[i].append(clock() - t0)
        finally:
            for m, mode in zip(modules, modes):
                m.train(mode)
    return times


def _median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def choose(fits, times=None):
    """Of fits (seconds, rank, peak, candidate, module) and their interleaved
    times (retime; None: the first timings alone, within TIE a tie): W, the
    one with the least median step, unless others are indistinguishable
    from it -- not slower in every round, or slower by at most TIE in the
    median round -- in which case the best ranked among W and those (the
    least forward seconds with what it recomputes, as measured at
    capture: what a step cannot tell, the plan's own estimate does), the
    least measured peak on equal ranks."""
    if times is None:
        fastest = min(f[0] for f in fits)
        tied = [f for f in fits if f[0] <= fastest * (1 + TIE)]
        return min(tied, key=lambda f: (f[1], f[2]))
    meds = [_median(t) for t in times]
    w = min(range(len(fits)), key=lambda i: (meds[i], fits[i][1]))

    def slower(i):
        ratios = [a / b for a, b in zip(times[i], times[w])]
        return all(r > 1 for r in ratios) and _median(ratios) > 1 + TIE

    tied = [i for i in range(len(fits)) if not slower(i)]
    return fits[min(tied, key=lambda i: (fits[i][1], fits[i][2]))]
