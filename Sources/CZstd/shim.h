// libzstd (Debian's libzstd-dev), for Discord's zstd-stream gateway transport compression.
#include <zstd.h>
