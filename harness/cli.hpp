#pragma once

namespace harness {
int main_cli(int argc, char** argv);
}
