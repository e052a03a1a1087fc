#include "cli.hpp"

#if defined(HB_SANITIZE)
// In the sanitizer build a plugin that crashes must still die by its signal, as it does for users,
// so that the worker reports it as crashed: AddressSanitizer leaves those signals alone. Plugins
// stay loaded, their threads running, until the process ends, where LeakSanitizer's tracer then
// crashes: the harness process is checked for memory errors, not leaks (the tests are).
extern "C" const char* __asan_default_options() {
    return "handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:handle_abort=0:"
           "detect_leaks=0";
}
#endif

int main(int argc, char** argv) {
    return harness::main_cli(argc, argv);
}
