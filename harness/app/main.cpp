#include "app/cli.h"

int main(int argc, char** argv) { return tunebench::cli::run(argc, argv); }
