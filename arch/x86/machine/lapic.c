/* Temporary stub. */
#include <machine/lapic.h>

void
lapic_stop_others(void)
{
}
