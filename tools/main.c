#include "memplan.h"
int main(void) { return 0; }
