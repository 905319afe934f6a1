# Installation: headers under include/c10d/, the library, tools, a CMake package and pkg-config.
