#include "store/tcp_store.h"
