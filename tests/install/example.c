/* example.c -- a program built against an installed memplan (tests/install/
 * run.sh links it through pkg-config, once shared and once static): plans
 * five buffers with "auto", proves the plan with the checker, prints the
 * footprint.  Exit status 0 only if all of that worked.
 *
 *     cc example.c $(pkg-config --cflags --libs memplan)
 */
#include <memplan.h>

#include <stdio.h>

int main(void) {
    /* Two layers' activations, a workspace and two gradients. */
    const mp_buffer_t b[] = {
        {.id = 0, .first = 0, .last = 2, .size = 4096},
        {.id = 1, .first = 1, .last = 3, .size = 8192},
        {.id = 2, .first = 2, .last = 2, .size = 1024, .align = 256},
        {.id = 3, .first = 3, .last = 4, .size = 8192},
        {.id = 4, .first = 4, .last = 5, .size = 4096},
    };
    const size_t n = sizeof b / sizeof b[0];
    mp_plan_t plan;
    if (mp_plan_compute(b, n, "auto", &plan) != MP_OK) {
        fprintf(stderr, "example: plan: %s\n", mp_last_error());
        return 1;
    }
    int rc = 0;
    if (mp_plan_check(b, n, &plan, NULL) != MP_OK) {
        fprintf(stderr, "example: check: %s\n", mp_last_error());
        rc = 1;
    }
    printf("memplan %s: %zu buffers, footprint %llu bytes (%s)\n", MP_VERSION, n,
           (unsigned long long)plan.footprint, plan.strategy);
    mp_plan_free(&plan);

    /* The graph reader uses jansson: calling it makes the static link need
     * Requires.private of memplan.pc.  "{}" is not a graph. */
    mp_graph_t *g = NULL;
    if (mp_graph_parse("{}", 2, "empty", &g) != MP_EPARSE) {
        fprintf(stderr, "example: \"{}\" parsed as a graph\n");
        mp_graph_free(g);
        rc = 1;
    }
    return rc;
}
