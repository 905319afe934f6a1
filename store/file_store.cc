#include "store/file_store.h"
