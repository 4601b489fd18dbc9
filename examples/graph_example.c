/* graph_example.c -- the graph layer from a program: load a forward graph,
 * add its backward pass, share memory in place and place the storages with
 * "auto", prove the plan, then run one training step on the planned arena
 * and once with every tensor in its own memory, and compare the outputs.
 *
 *     graph_example [GRAPH.json[.gz]]     (default: tests/graph/mlp.json)
 *
 * Exit status 0 when the two runs agree bit for bit. */
#include "memplan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what) {
    fprintf(stderr, "graph_example: %s: %s\n", what, mp_last_error());
    return 2;
}

/* Every graph output of a and b, byte for byte. */
static int same_outputs(const mp_exec_result_t *a, const mp_exec_result_t *b, size_t *count) {
    *count = 0;
    for (size_t i = 0; i < a->n_tensors; i++) {
        if (!a->data[i]) continue;
        ++*count;
        if (!b->data[i] || a->bytes[i] != b->bytes[i] || memcmp(a->data[i], b->data[i], a->bytes[i]))
            return 0;
    }
    return 1;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "tests/graph/mlp.json";
    mp_graph_t *fwd = NULL, *train = NULL;
    mp_graph_plan_t plan = {0};
    mp_exec_result_t naive = {0}, planned = {0};
    int rc = 2;

    if (mp_graph_load(path, &fwd) != MP_OK) return fail(path);
    mp_backward_opts_t bo = {.add_loss = 1};
    mp_backward_stats_t bs;
    if (mp_graph_backward(fwd, &bo, &train, &bs) != MP_OK) {
        rc = fail("backward");
        goto done;
    }
    mp_share_opts_t so = {.inplace = 1};
    if (mp_graph_share(train, &so, &plan) != MP_OK || mp_graph_plan_place(train, &plan, "auto") != MP_OK ||
        mp_graph_plan_check(train, &plan, MP_PARALLEL_ANY) != MP_OK) {
        rc = fail("plan");
        goto done;
    }
    mp_exec_opts_t eo = {.seed = 1};
    if (mp_exec_run(train, &eo, &naive) != MP_OK) {
        rc = fail("naive run");
        goto done;
    }
    eo.plan = &plan;
    eo.poison = 1;
    if (mp_exec_run(train, &eo, &planned) != MP_OK) {
        rc = fail("planned run");
        goto done;
    }
    size_t outputs;
    int same = same_outputs(&naive, &planned, &outputs);
    mp_graph_stats_t st;
    mp_graph_stats(train, &st);
    printf("%s: %zu gradient nodes; activations %llu bytes naive, %llu in the arena (%s);\n"
           "%zu outputs (loss and gradients) %s\n",
           path, bs.backward_nodes, (unsigned long long)(st.owned_bytes - st.persistent_bytes),
           (unsigned long long)plan.footprint, plan.placement, outputs,
           same ? "bit-identical to the naive run" : "DIFFER from the naive run");
    rc = same ? 0 : 1;
done:
    mp_exec_result_free(&planned);
    mp_exec_result_free(&naive);
    mp_graph_plan_free(&plan);
    mp_graph_free(train);
    mp_graph_free(fwd);
    return rc;
}
