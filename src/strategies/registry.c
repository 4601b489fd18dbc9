/* registry.c -- the strategy registry and running a strategy by name.
 *
 * mp_plan_compute validates the problem, normalizes it (sizes rounded to
 * alignment), runs one strategy and turns its answer into an mp_plan_t
 * (shared-object answers through mp__plan_from_objects).  "auto" is
 * mp_plan_auto (src/offsets/auto.c).  In debug builds every plan goes
 * through the checker.  The problem model (src/core/) knows none of this. */
#include "strategies.h"

#include <stdlib.h>
#include <string.h>

#define OFF(nm, fn, src, sum, a) {{nm, MP_KIND_OFFSETS, src, sum, 0}, fn, NULL, a}
#define OBJ(nm, fn, src, sum, lim) {{nm, MP_KIND_OBJECTS, src, sum, lim}, NULL, fn, false}

static const mp__strategy registry[] = {
    OFF("naive", mp__offsets_naive, "baseline", "every buffer its own region", false),
    OFF("greedy-size", mp__offsets_greedy_size, "pisarchyk2020 sec. 5.2, Alg. 3",
        "largest first, into the smallest gap between conflicting buffers", true),
    OFF("greedy-breadth", mp__offsets_greedy_breadth, "pisarchyk2020 sec. 5.3",
        "operators by breadth, their tensors largest first, smallest gap", true),
    OFF("strip-bestfit", mp__offsets_strip_bestfit, "sekiyama2018 sec. 3.2",
        "best-fit strip packing: lowest offset line, longest lifetime, lift-up merge", true),
    OFF("smartpool-bestfit", mp__offsets_smartpool_bestfit, "zhang2019 sec. III-C",
        "size-descending, into the smallest hole between conflicting blocks", true),
    OFF("smartpool-firstfit", mp__offsets_smartpool_firstfit, "zhang2019 sec. III-C",
        "size-descending, into the lowest hole between conflicting blocks", true),
    OFF("inorder", mp__offsets_inorder, "chen2016 Fig. 2; MXNet memory note",
        "execution order, best-size match from a box of freed regions", true),
    OBJ("objects-naive", mp__objects_naive, "baseline", "every buffer its own object", 0),
    OBJ("objects-greedy-size", mp__objects_greedy_size, "pisarchyk2020 sec. 4.3, Alg. 2",
        "largest first, smallest suitable object", 0),
    OBJ("objects-greedy-size-improved", mp__objects_greedy_size_improved,
        "pisarchyk2020 sec. 4.4", "stages by positional maximum, smallest time gap first", 0),
    OBJ("objects-greedy-breadth", mp__objects_greedy_breadth, "pisarchyk2020 sec. 4.2, Alg. 1",
        "operators by breadth, best-size suitable object", 0),
    OBJ("objects-inorder", mp__objects_inorder, "chen2016 Fig. 2; MXNet memory note",
        "execution order, reuse the free object of closest size, grow if needed", 0),
    OBJ("objects-mincostflow", mp__objects_mincostflow, "Lee et al. 2019 via pisarchyk2020",
        "assignment as a min-cost flow (TFLite GPU delegate)", 5000),
    {{"auto", MP_KIND_META, "memplan",
      "runs the offset strategies, keeps the smallest (ties: first)", 0}, NULL, NULL, false},
    /* After "auto", whose plan it starts from. */
    {{"exact", MP_KIND_OFFSETS, "after Moffitt 2024 (MiniMalloc)",
      "branch and bound from auto's plan: optimal, or a proven gap",
      40}, mp__offsets_exact, NULL, false},
};

#define N_STRATEGIES (sizeof registry / sizeof registry[0])

size_t mp_strategy_count(void) { return N_STRATEGIES; }

const mp_strategy_info_t *mp_strategy_info(size_t i) {
    return i < N_STRATEGIES ? &registry[i].info : NULL;
}

static const mp__strategy *find(const char *name) {
    for (size_t i = 0; name && i < N_STRATEGIES; i++)
        if (strcmp(registry[i].info.name, name) == 0) return &registry[i];
    return NULL;
}

const mp_strategy_info_t *mp_strategy_find(const char *name) {
    const mp__strategy *s = find(name);
    return s ? &s->info : NULL;
}

const mp__strategy *mp__registry(size_t *count) {
    *count = N_STRATEGIES;
    return registry;
}

mp_status mp__run_strategy(const mp__strategy *st, const mp_buffer_t *b, size_t n,
                         mp_plan_t *out) {
    memset(out, 0, sizeof *out);
    mp_status s;
    if (st->offsets) {
        uint64_t *off = calloc(n ? n : 1, sizeof *off);
        if (!off) return MP__NOMEM();
        if ((s = st->offsets(b, n, off)) != MP_OK) {
            free(off);
            return s;
        }
        *out = (mp_plan_t){.n = n, .offset = off, .footprint = mp__footprint(b, n, off)};
    } else {
        size_t *obj = calloc(n ? n : 1, sizeof *obj), k = 0;
        if (!obj) return MP__NOMEM();
        if ((s = st->objects(b, n, obj, &k)) != MP_OK) {
            free(obj);
            return s;
        }
        if ((s = mp__plan_from_objects(b, n, obj, k, out)) != MP_OK) return s;
    }
    out->strategy = st->info.name;
#ifdef MP_DEBUG
    /* The checker may itself run out of memory; anything else is a bug. */
    s = mp_plan_check(b, n, out, NULL);
    MP__ASSERT(s == MP_OK || s == MP_ENOMEM);
    if (s != MP_OK) mp_plan_free(out);
    return s;
#else
    return MP_OK;
#endif
}

static mp_status prepare(const mp_buffer_t *b, size_t n, mp_buffer_t **nb) {
    mp_status s = mp_problem_validate(b, n);
    return s != MP_OK ? s : mp__normalize(b, n, nb);
}

mp_status mp_plan_auto(const mp_buffer_t *b, size_t n, mp_plan_t *out, mp_auto_report_t *rep) {
    if (!out) return mp__err(MP_EINVAL, "mp_plan_auto: NULL plan");
    memset(out, 0, sizeof *out);
    mp_buffer_t *nb;
    mp_status s = prepare(b, n, &nb);
    if (s != MP_OK) return s;
    s = mp__auto(nb, n, out, rep);
    free(nb);
    return s;
}

mp_status mp_plan_compute(const mp_buffer_t *b, size_t n, const char *strategy,
                          mp_plan_t *out) {
    if (!out) return mp__err(MP_EINVAL, "mp_plan_compute: NULL plan");
    memset(out, 0, sizeof *out);
    const mp__strategy *st = find(strategy);
    if (!st)
        return mp__err(MP_ENOTFOUND, "unknown strategy '%s' (see 'memplan strategies')",
                       strategy ? strategy : "(null)");
    if (!st->offsets && !st->objects) return mp_plan_auto(b, n, out, NULL);
    mp_buffer_t *nb;
    mp_status s = prepare(b, n, &nb);
    if (s != MP_OK) return s;
    s = mp__run_strategy(st, nb, n, out);
    free(nb);
    return s;
}
