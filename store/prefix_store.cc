#include "store/prefix_store.h"
