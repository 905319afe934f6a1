#include "store/hash_store.h"
