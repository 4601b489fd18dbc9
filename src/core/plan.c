/* plan.c -- plans as the problem model knows them: releasing one, and
 * turning a shared-object answer into offsets by laying the objects out
 * one after another (pisarchyk2020 sec. 5: the conversion is always
 * possible, the reverse is not).  Which strategy made a plan is
 * src/strategies/'s business. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

void mp_plan_free(mp_plan_t *p) {
    if (!p) return;
    free(p->offset);
    free(p->object);
    free(p->object_size);
    memset(p, 0, sizeof *p);
}

mp_status mp__plan_from_objects(const mp_buffer_t *b, size_t n, size_t *object, size_t k,
                                mp_plan_t *out) {
    uint64_t *osz = calloc(k ? k : 1, sizeof *osz);
    uint64_t *oal = calloc(k ? k : 1, sizeof *oal);
    uint64_t *off = malloc((n ? n : 1) * sizeof *off);
    mp__key *ord = malloc((k ? k : 1) * sizeof *ord);
    mp_status s = osz && oal && off && ord ? MP_OK : MP__NOMEM();
    for (size_t i = 0; s == MP_OK && i < n; i++) {
        osz[object[i]] = mp__max64(osz[object[i]], b[i].size);
        oal[object[i]] = mp__max64(oal[object[i]], b[i].align);
    }
    /* An object is as large as its largest member, rounded up to its
     * largest alignment (never more than the members' sum).  Objects are
     * laid out by decreasing alignment, then number: every start is then a
     * multiple of every later alignment, so no padding is ever needed and
     * the footprint is the sum of object sizes. */
    for (size_t o = 0; s == MP_OK && o < k; o++) {
        oal[o] = oal[o] ? oal[o] : 1;
        osz[o] = mp__align_up(osz[o], oal[o]);
        ord[o] = (mp__key){UINT64_MAX - oal[o], 0, o};
    }
    if (s == MP_OK) s = mp__sort_keys(ord, k);
    uint64_t end = 0;
    for (size_t j = 0; s == MP_OK && j < k; j++) {
        oal[ord[j].i] = end; /* oal now holds each object's start */
        end += osz[ord[j].i];
    }
    for (size_t i = 0; s == MP_OK && i < n; i++) off[i] = oal[object[i]];
    free(oal);
    free(ord);
    if (s != MP_OK) {
        free(osz), free(off), free(object);
        return s;
    }
    out->n = n;
    out->offset = off;
    out->object = object;
    out->object_size = osz;
    out->n_objects = k;
    out->footprint = mp__footprint(b, n, off);
    return MP_OK;
}
