// A shared library that exports something, but not the plugin entry point.
extern "C" int hb_not_the_entry(void) {
    return 42;
}
