/* graph_json.h -- jansson helpers shared by the files of src/graph/ that
 * build JSON (builder.c, save.c).  Kept apart from graph_internal.h so
 * that files which never touch JSON need not include jansson. */
#ifndef MEMPLAN_GRAPH_JSON_H
#define MEMPLAN_GRAPH_JSON_H

#include <stddef.h>

#include <jansson.h>

/* A JSON array of the n ids; NULL when out of memory. */
json_t *mp__json_id_array(const size_t *ids, size_t n);

#endif
