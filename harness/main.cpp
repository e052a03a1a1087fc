#include "cli.hpp"

int main(int argc, char** argv) {
    return harness::main_cli(argc, argv);
}
