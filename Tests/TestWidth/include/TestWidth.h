// The test binary's width: see width.c. Nothing to call; linking the target is enough.
