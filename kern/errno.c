/*
 * Error code names, for messages.
 */
#include <stddef.h>

#include <kern/errno.h>
#include <kern/macros.h>

struct errno_desc {
    int error;
    const char *name;
    const char *text;
};

static const struct errno_desc errno_descs[] = {
    { EPERM, "EPERM", "operation not permitted" },
    { ENOENT, "ENOENT", "no such entry" },
    { EINTR, "EINTR", "interrupted" },
    { EIO, "EIO", "input/output error" },
    { E2BIG, "E2BIG", "argument too large" },
    { EAGAIN, "EAGAIN", "resource temporarily unavailable" },
    { ENOMEM, "ENOMEM", "out of memory" },
    { EBUSY, "EBUSY", "resource busy" },
    { EEXIST, "EEXIST", "already exists" },
    { ENODEV, "ENODEV", "no device serves this request" },
    { EINVAL, "EINVAL", "invalid argument" },
    { ERANGE, "ERANGE", "value out of range" },
    { ENOSYS, "ENOSYS", "not implemented" },
    { EMSGSIZE, "EMSGSIZE", "message too long" },
    { ETIMEDOUT, "ETIMEDOUT", "timed out" },
};

static const struct errno_desc *
errno_find(int error)
{
    for (size_t i = 0; i < ARRAY_SIZE(errno_descs); i++) {
        if (errno_descs[i].error == error) {
            return &errno_descs[i];
        }
    }

    return NULL;
}

const char *
errno_name(int error)
{
    const struct errno_desc *desc = errno_find(error);

    return (desc == NULL) ? "E?" : desc->name;
}

const char *
errno_str(int error)
{
    const struct errno_desc *desc = errno_find(error);

    return (desc == NULL) ? "unknown error" : desc->text;
}
