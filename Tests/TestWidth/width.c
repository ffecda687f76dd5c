#include <stdlib.h>
#include "TestWidth.h"

// `swift test`, typed as it is, runs the tests eight at once, as scripts/test does: the servers
// the tests start share two cores well at that width, and all at once they starve each other's
// deadlines. Set when the test binary loads, before Swift Testing reads its configuration; a
// width given in the environment wins.
__attribute__((constructor)) static void threaddesk_test_width(void) {
    setenv("SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH", "8", 0);
}
