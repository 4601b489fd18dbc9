/* test_swap_iter.c -- the swap planner's inputs (src/swap/iter.c, link.c,
 * device.c): timed iterations made from graphs (checked by hand on the
 * MLP of tests/graph/mlp.json), their validation, the transfer model and
 * its presets, and the device presets. */
#include "harness.h"

#include <math.h>
#include <string.h>

/* A device where an op costs exactly its FLOPs in ns. */
static mp_swap_device_t flop_device(void) {
    mp_swap_device_t d = {.flops = 1e9, .bytes_per_s = 1e30, .launch_ns = 0};
    strcpy(d.name, "unit");
    return d;
}

static size_t var_named(const mp_swap_iter_t *it, const char *name) {
    for (size_t v = 0; v < it->n_vars; v++)
        if (!strcmp(it->var[v].name, name)) return v;
    return (size_t)-1;
}

/* mlp.json: x[4,8] -> fc1 (W[16,8], b[16]) -> h1[4,16] -> relu -> h2 ->
 * fc2 (W[3,16]) -> logits[4,3].  FLOPs by the estimate: fc1 2*8*64 = 1024,
 * relu 64 (one per element), fc2 2*16*12 = 384. */
static void test_forward_mlp(void) {
    mp_graph_t *g;
    if (!MP_CHECK_OK(mp_graph_load("graph/mlp.json", &g))) return;
    mp_swap_device_t d = flop_device();
    mp_swap_iter_t it;
    if (!MP_CHECK_OK(mp_swap_iter_from_graph(g, &d, &it))) return mp_graph_free(g);
    MP_CHECK_OK(mp_swap_iter_validate(&it));
    MP_CHECK_EQ_U64(it.n_ops, 3);
    MP_CHECK_EQ_U64(it.n_vars, 7);
    MP_CHECK_EQ_U64(it.op[0].ns, 1024);
    MP_CHECK_EQ_U64(it.op[1].ns, 64);
    MP_CHECK_EQ_U64(it.op[2].ns, 384);
    MP_CHECK(!strcmp(it.op[0].name, "fc1"));
    size_t w1 = var_named(&it, "fc1.weight"), h1 = var_named(&it, "h1");
    MP_CHECK(w1 < it.n_vars && it.var[w1].persistent && it.var[w1].size == 512);
    MP_CHECK(h1 < it.n_vars && !it.var[h1].persistent && it.var[h1].size == 256);
    /* fc1 reads x, W, b and writes h1; relu reads h1 and writes h2 */
    MP_CHECK_EQ_U64(it.op[0].n, 4);
    MP_CHECK_EQ_U64(it.op[1].n, 2);
    MP_CHECK(it.access[it.op[1].first].var == h1 && !it.access[it.op[1].first].write);
    MP_CHECK(it.access[it.op[1].first + 1].write);
    mp_swap_iter_free(&it);
    MP_CHECK(it.var == NULL && it.n_ops == 0);
    mp_swap_iter_free(&it);                     /* twice is fine */
    mp_graph_free(g);
}

/* The training graph: every owned tensor a variable, gradients persistent,
 * a gradient node twice its forward node's FLOPs, the sum of op times the
 * graph's FLOPs on the unit device. */
static void test_training_mlp(void) {
    mp_graph_t *g, *t;
    if (!MP_CHECK_OK(mp_graph_load("graph/mlp.json", &g))) return;
    mp_backward_opts_t bo = {.add_loss = 1};
    if (!MP_CHECK_OK(mp_graph_backward(g, &bo, &t, NULL))) return mp_graph_free(g);
    mp_swap_device_t d = flop_device();
    mp_swap_iter_t it;
    if (MP_CHECK_OK(mp_swap_iter_from_graph(t, &d, &it))) {
        MP_CHECK_OK(mp_swap_iter_validate(&it));
        size_t steps;
        mp_graph_order(t, &steps);
        MP_CHECK_EQ_U64(it.n_ops, steps);
        size_t gw = var_named(&it, "grad:fc1.weight");
        MP_CHECK(gw < it.n_vars && it.var[gw].persistent);
        uint64_t fc1 = 0, fc1_grad = 0;
        for (size_t o = 0; o < it.n_ops; o++) {
            if (!strcmp(it.op[o].name, "fc1")) fc1 = it.op[o].ns;
            if (strstr(it.op[o].name, "fc1") && strstr(it.op[o].name, "bwd")) fc1_grad = it.op[o].ns;
        }
        MP_CHECK_EQ_U64(fc1, 1024);
        MP_CHECK_EQ_U64(fc1_grad, 2048);
        mp_swap_iter_free(&it);
    }
    mp_graph_free(t);
    mp_graph_free(g);
}

static void test_validate(void) {
    mp_swap_var_t var[2] = {{.size = 8, .name = "a"}, {.size = 4, .name = "b"}};
    mp_swap_access_t acc[3] = {{0, 1}, {0, 0}, {1, 1}};
    mp_swap_op_t op[2] = {{.ns = 1, .first = 0, .n = 1, .name = "p"}, {.ns = 1, .first = 1, .n = 2, .name = "q"}};
    mp_swap_iter_t it = {2, 2, 3, var, op, acc};
    MP_CHECK_OK(mp_swap_iter_validate(&it));
    acc[2].var = 0;
    MP_CHECK(mp_swap_iter_validate(&it) == MP_EINVAL &&
             !strcmp(mp_last_error(), "swap iteration: op 1 accesses variable 0 twice"));
    acc[2].var = 5;
    MP_CHECK(mp_swap_iter_validate(&it) == MP_EINVAL &&
             !strcmp(mp_last_error(), "swap iteration: op 1: variable 5 does not exist"));
    acc[2].var = 0, op[1].n = 1;
    MP_CHECK(mp_swap_iter_validate(&it) == MP_EINVAL &&
             !strcmp(mp_last_error(), "swap iteration: variable 1 is never accessed"));
    op[1].n = 9;
    MP_CHECK(mp_swap_iter_validate(&it) == MP_EINVAL &&
             !strcmp(mp_last_error(), "swap iteration: op 1: accesses out of range"));
    op[1].n = 2, acc[2].var = 1, var[1].size = 0;
    MP_CHECK(mp_swap_iter_validate(&it) == MP_EINVAL &&
             !strcmp(mp_last_error(), "swap iteration: variable 1 has size 0"));
}

/* pcie3: out 47.2 us + b / 13.2 GB/s, in 9.7 us + b / 12.2 GB/s. */
static void test_links(void) {
    mp_swap_link_t l;
    MP_CHECK_OK(mp_swap_link_preset("pcie3", &l));
    MP_CHECK_EQ_U64(mp_swap_out_ns(&l, 0), 47200);
    MP_CHECK_EQ_U64(mp_swap_out_ns(&l, 132000000), 47200 + 10000000);   /* 132 MB: 10 ms */
    MP_CHECK_EQ_U64(mp_swap_in_ns(&l, 122000000), 9700 + 10000000);
    MP_CHECK_EQ_U64(mp_swap_in_ns(&l, 1), 9700 + 1);                    /* rounded up */
    for (size_t i = 0; mp_swap_link_preset_name(i); i++) {
        MP_CHECK_OK(mp_swap_link_preset(mp_swap_link_preset_name(i), &l));
        MP_CHECK(l.out_bytes_per_s > 0 && l.in_bytes_per_s > 0);
        MP_CHECK(!strcmp(l.name, mp_swap_link_preset_name(i)));
    }
    MP_CHECK(mp_swap_link_preset("pcie9", &l) == MP_ENOTFOUND &&
             !strcmp(mp_last_error(),
                     "unknown link 'pcie9' (pcie3, pcie4, pcie5, nvlink-c2c, measured, or BW,LAT)"));
    MP_CHECK_OK(mp_swap_link_parse("12G,10us", &l));
    MP_CHECK(l.out_bytes_per_s == 12e9 && l.in_lat_ns == 10000 && !strcmp(l.name, "custom"));
    MP_CHECK_OK(mp_swap_link_parse("500MB/s,250", &l));
    MP_CHECK(l.in_bytes_per_s == 5e8 && l.out_lat_ns == 250);
    MP_CHECK(mp_swap_link_parse("12G", &l) == MP_EINVAL &&
             !strcmp(mp_last_error(), "link '12G': expected BANDWIDTH,LATENCY (e.g. 12G,10us)"));
    MP_CHECK(mp_swap_link_parse("fast,1us", &l) == MP_EINVAL &&
             !strcmp(mp_last_error(), "link 'fast,1us': field 'bandwidth': 'fast' is not a "
                                      "positive number of bytes/s (e.g. 12G)"));
    MP_CHECK(mp_swap_link_parse("1G,soon", &l) == MP_EINVAL &&
             !strcmp(mp_last_error(), "link '1G,soon': field 'latency': 'soon' is not a time "
                                      "(e.g. 10us, 500ns)"));
    MP_CHECK(mp_swap_link_parse("0,1us", &l) == MP_EINVAL);
}

static void test_devices(void) {
    mp_swap_device_t d;
    for (size_t i = 0; mp_swap_device_preset_name(i); i++) {
        MP_CHECK_OK(mp_swap_device_preset(mp_swap_device_preset_name(i), &d));
        /* "cpu" is measured: an unoptimised sanitizer build on a loaded
         * machine reaches only some MFLOP/s */
        double least = strcmp(d.name, "cpu") ? 1e8 : 1e6;
        MP_CHECK(d.flops > least && d.bytes_per_s > least);
    }
    MP_CHECK_OK(mp_swap_device_preset("gtx1080ti", &d));
    MP_CHECK(fabs(d.flops - 11.34e12) < 1 && fabs(d.bytes_per_s - 484e9) < 1);
    MP_CHECK(mp_swap_device_preset("tpu", &d) == MP_ENOTFOUND &&
             !strcmp(mp_last_error(), "unknown device 'tpu' (gtx1080ti, v100, h100, cpu)"));
}

int main(void) {
    test_forward_mlp();
    test_training_mlp();
    test_validate();
    test_links();
    test_devices();
    return mp_test_finish("test_swap_iter");
}
