/* floor.c: the system-call floor of a request/response load generator on this kernel.
 *
 * A client that does nothing but what every closed-loop generator must: CONNS non-blocking
 * TCP connections on one epoll (level-triggered, registered once), each sending DEPTH
 * copies of one fixed request in one send(2), then reading with recv(2) until DEPTH
 * replies of a known length have come back, then sending again. No parsing, no timing of
 * requests, no histogram: its CPU per request is what the kernel charges for the
 * connection's system calls and the TCP path behind them, and nothing more. A generator's
 * CPU per request over this floor's is how close it is to the floor.
 *
 * With -u it does the same through io_uring (one io_uring_enter submits every send and
 * receive that is ready and reaps what completed), to show whether batching the system
 * calls across connections moves the floor. With -m, through io_uring with one multishot
 * receive armed per connection into provided buffers (Linux 6.0+): no poll re-armed per
 * reply, which is what rackbench's closed loop does where the kernel has it.
 *
 * Usage: floor [-u|-m] HOST PORT CONNS DEPTH SECONDS REQUEST_FILE REPLY_BYTES
 * Prints: requests=N seconds=S user_s=U sys_s=K us_per_req=X
 * Build: cc -O2 -o floor floor.c [-DWITH_URING -luring]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#ifdef WITH_URING
#include <liburing.h>
#include <sys/mman.h>
#endif

struct conn {
    int fd;
    size_t want;  /* reply bytes still expected for the batch in flight */
};

static char *batch;
static size_t batch_len, reply_len;
static int depth;
static char rbuf[1 << 16];

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what) {
    perror(what);
    exit(1);
}

static int dial(const char *host, int port) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1) die("address");
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) die("socket");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) die("connect");
    fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
}

static void report(unsigned long long reqs, double secs) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double u = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
    double k = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    printf("requests=%llu seconds=%.3f user_s=%.3f sys_s=%.3f us_per_req=%.4f\n", reqs, secs,
           u, k, reqs ? (u + k) * 1e6 / reqs : 0.0);
}

static int run_epoll(struct conn *c, int n, double secs) {
    int ep = epoll_create1(0);
    for (int i = 0; i < n; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = i};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, c[i].fd, &ev) < 0) die("epoll_ctl");
        if (send(c[i].fd, batch, batch_len, 0) != (ssize_t)batch_len) die("send");
        c[i].want = reply_len * depth;
    }
    unsigned long long reqs = 0;
    struct epoll_event evs[256];
    double t0 = now_s(), end = t0 + secs;
    for (;;) {
        int k = epoll_wait(ep, evs, 256, 100);
        if (k < 0 && errno != EINTR) die("epoll_wait");
        for (int e = 0; e < k; e++) {
            struct conn *x = &c[evs[e].data.u32];
            ssize_t r = recv(x->fd, rbuf, sizeof rbuf, 0);
            if (r <= 0) {
                if (r < 0 && errno == EAGAIN) continue;
                fprintf(stderr, "connection closed\n");
                return 1;
            }
            if ((size_t)r > x->want) {
                fprintf(stderr, "more reply bytes than expected: is REPLY_BYTES right?\n");
                return 1;
            }
            x->want -= r;
            if (x->want == 0) {
                reqs += depth;
                if (send(x->fd, batch, batch_len, 0) != (ssize_t)batch_len) die("send");
                x->want = reply_len * depth;
            }
        }
        if (now_s() >= end) break;
    }
    report(reqs, now_s() - t0);
    return 0;
}

#ifdef WITH_URING
/* user_data: connection index << 1 | 1 for a receive, 0 for a send. */

/* Queue connection i's next batch of DEPTH requests, and expect its replies. */
static void queue_batch(struct io_uring *ring, struct conn *c, int i) {
    struct io_uring_sqe *s = io_uring_get_sqe(ring);
    io_uring_prep_send(s, c[i].fd, batch, batch_len, 0);
    io_uring_sqe_set_data64(s, (unsigned long long)i << 1);
    c[i].want = reply_len * depth;
}

static int run_uring(struct conn *c, int n, double secs) {
    struct io_uring ring;
    /* Completions run when this task asks for them (not by interrupting it per packet):
     * the cheapest mode on 6.1+; the plain ring where the kernel lacks it. */
    if (io_uring_queue_init(2 * n + 8, &ring,
                            IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN) < 0 &&
        io_uring_queue_init(2 * n + 8, &ring, 0) < 0)
        die("io_uring_queue_init");
    char (*bufs)[4096] = calloc(n, 4096);
    for (int i = 0; i < n; i++) {
        queue_batch(&ring, c, i);
        struct io_uring_sqe *s = io_uring_get_sqe(&ring);
        io_uring_prep_recv(s, c[i].fd, bufs[i], 4096, 0);
        io_uring_sqe_set_data64(s, (unsigned long long)i << 1 | 1);
    }
    unsigned long long reqs = 0;
    double t0 = now_s(), end = t0 + secs;
    for (;;) {
        io_uring_submit_and_wait(&ring, 1);
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&ring, head, cqe) {
            seen++;
            unsigned long long d = cqe->user_data;
            int i = d >> 1;
            if (!(d & 1)) {
                if (cqe->res != (int)batch_len) { fprintf(stderr, "short send\n"); return 1; }
                continue;
            }
            if (cqe->res <= 0) { fprintf(stderr, "recv: %d\n", cqe->res); return 1; }
            if ((size_t)cqe->res > c[i].want) {
                fprintf(stderr, "more reply bytes than expected: is REPLY_BYTES right?\n");
                return 1;
            }
            c[i].want -= cqe->res;
            if (c[i].want == 0) {
                reqs += depth;
                queue_batch(&ring, c, i);
            }
            struct io_uring_sqe *s = io_uring_get_sqe(&ring);
            io_uring_prep_recv(s, c[i].fd, bufs[i], 4096, 0);
            io_uring_sqe_set_data64(s, (unsigned long long)i << 1 | 1);
        }
        io_uring_cq_advance(&ring, seen);
        if (now_s() >= end) break;
    }
    report(reqs, now_s() - t0);
    return 0;
}

/* -m: one multishot receive per connection into a ring of provided buffers. */
#define NBUF 1024
#define BUF_SIZE 4096
static void arm_multishot(struct io_uring *ring, int fd, int i) {
    struct io_uring_sqe *s = io_uring_get_sqe(ring);
    io_uring_prep_recv_multishot(s, fd, NULL, 0, 0);
    s->flags |= IOSQE_BUFFER_SELECT;
    s->buf_group = 0;
    io_uring_sqe_set_data64(s, (unsigned long long)i << 1 | 1);
}

static int run_multishot(struct conn *c, int n, double secs) {
    struct io_uring ring;
    if (io_uring_queue_init(4 * n + 8, &ring,
                            IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN) < 0)
        die("io_uring_queue_init (multishot needs Linux 6.1)");
    struct io_uring_buf_ring *br = mmap(NULL, NBUF * sizeof(struct io_uring_buf),
                                        PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
    char *mem = malloc((size_t)NBUF * BUF_SIZE);
    if (br == MAP_FAILED || !mem) die("buffers");
    io_uring_buf_ring_init(br);
    struct io_uring_buf_reg reg = {.ring_addr = (unsigned long)br, .ring_entries = NBUF, .bgid = 0};
    if (io_uring_register_buf_ring(&ring, &reg, 0)) die("io_uring_register_buf_ring");
    int mask = io_uring_buf_ring_mask(NBUF);
    for (int b = 0; b < NBUF; b++)
        io_uring_buf_ring_add(br, mem + (size_t)b * BUF_SIZE, BUF_SIZE, b, mask, b);
    io_uring_buf_ring_advance(br, NBUF);
    for (int i = 0; i < n; i++) {
        arm_multishot(&ring, c[i].fd, i);
        queue_batch(&ring, c, i);
    }
    unsigned long long reqs = 0;
    double t0 = now_s(), end = t0 + secs;
    for (;;) {
        io_uring_submit_and_wait(&ring, 1);
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0, given = 0;
        io_uring_for_each_cqe(&ring, head, cqe) {
            seen++;
            unsigned long long d = cqe->user_data;
            int i = d >> 1;
            if (!(d & 1)) {
                if (cqe->res != (int)batch_len) { fprintf(stderr, "short send\n"); return 1; }
                continue;
            }
            if (cqe->res <= 0 && cqe->res != -ENOBUFS) { fprintf(stderr, "recv: %d\n", cqe->res); return 1; }
            if (cqe->flags & IORING_CQE_F_BUFFER) {
                int bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
                io_uring_buf_ring_add(br, mem + (size_t)bid * BUF_SIZE, BUF_SIZE, bid, mask, given++);
            }
            if (cqe->res > 0) {
                if ((size_t)cqe->res > c[i].want) {
                    fprintf(stderr, "more reply bytes than expected: is REPLY_BYTES right?\n");
                    return 1;
                }
                c[i].want -= cqe->res;
                if (c[i].want == 0) {
                    reqs += depth;
                    queue_batch(&ring, c, i);
                }
            }
            if (!(cqe->flags & IORING_CQE_F_MORE)) arm_multishot(&ring, c[i].fd, i);
        }
        io_uring_buf_ring_advance(br, given);
        io_uring_cq_advance(&ring, seen);
        if (now_s() >= end) break;
    }
    report(reqs, now_s() - t0);
    return 0;
}
#endif

int main(int argc, char **argv) {
    int uring = 0;
    if (argc > 1 && (strcmp(argv[1], "-u") == 0 || strcmp(argv[1], "-m") == 0)) {
        uring = argv[1][1] == 'u' ? 1 : 2;
        argv++;
        argc--;
    }
    if (argc != 8) {
        fprintf(stderr, "usage: floor [-u|-m] HOST PORT CONNS DEPTH SECONDS REQUEST_FILE REPLY_BYTES\n");
        return 2;
    }
    int n = atoi(argv[3]);
    depth = atoi(argv[4]);
    double secs = atof(argv[5]);
    reply_len = strtoul(argv[7], NULL, 10);
    FILE *f = fopen(argv[6], "rb");
    if (!f) die("request file");
    char req[4096];
    size_t rl = fread(req, 1, sizeof req, f);
    fclose(f);
    if (n < 1 || depth < 1 || rl == 0 || reply_len == 0) {
        fprintf(stderr, "floor: CONNS, DEPTH, the request and REPLY_BYTES must be positive\n");
        return 2;
    }
    batch_len = rl * depth;
    batch = malloc(batch_len);
    for (int i = 0; i < depth; i++) memcpy(batch + i * rl, req, rl);
    struct conn *c = calloc(n, sizeof *c);
    for (int i = 0; i < n; i++) c[i].fd = dial(argv[1], atoi(argv[2]));
    if (uring) {
#ifdef WITH_URING
        return uring == 2 ? run_multishot(c, n, secs) : run_uring(c, n, secs);
#else
        fprintf(stderr, "floor: built without io_uring (cc -DWITH_URING ... -luring)\n");
        return 2;
#endif
    }
    return run_epoll(c, n, secs);
}
