/* ft.h: the short name of <frankentrace.h>, kept for the code that includes it (docs/install.md). */
#include "frankentrace.h"
