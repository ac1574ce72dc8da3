/*
 * Error codes. Functions return them as positive int values, 0 on success.
 */
#ifndef KERN_ERRNO_H
#define KERN_ERRNO_H

#define EPERM   1
#define ENOENT  2
#define EINTR   4
#define EIO     5
#define E2BIG   7
#define EAGAIN  11
#define ENOMEM  12
#define EBUSY   16
#define EEXIST  17
#define ENODEV  19
#define EINVAL  22
#define ERANGE  34
#define ENOSYS  38
#define EMSGSIZE 90
#define ETIMEDOUT 110

/*
 * Return the symbolic name of an error code ("EINVAL"), or "E?" when
 * unknown. Any context.
 */
const char *errno_name(int error);

/*
 * Return a one-sentence description of an error code. Any context.
 */
const char *errno_str(int error);

#endif /* KERN_ERRNO_H */
