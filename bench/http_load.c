/* The HTTP benchmark's load generator in C: the same runs as http_load.py, for less CPU.

    cc -O2 -o http_load bench/http_load.c
    ./http_load URL [URL ...] --clients 16 --runs 1000 --seconds 60 --warm 32 [--affinity]

Built and started by http_bench.py (cached by this file's hash). The workload, the
checks and the protocol on stdout are http_load.py's: each of N clients repeats a whole
run (create a session, POST /run, which pauses at its question, then answer it) on
keep-alive HTTP/1.1 connections of its own, one per server, each request going to the
servers in turn (with --affinity, every request of client i to server i mod N). Every response is checked: its status, the new session's "id", that
/run's last event is the question (a functionCall named adk_request_input) and that
the answer's last event has the output "approved"; a run that did otherwise counts as
a failure, with what came back. After the warm-up runs it prints `measuring`, after the
measured runs one JSON line (runs, requests, answers: each answering call's seconds,
failures, elapsed, client_cpu). One thread, one epoll loop; 127.0.0.1 only.

Why C: on 2 cores the load generator's CPU competes with the servers and the database it
measures, and lowers the most two server processes can give (http_bench.py's bound). The
Python client cost 0.08 ms of CPU a request, this one 0.035 (measured side by side on one
server): what is left is mostly the kernel's loopback TCP, which a sender pays for. */

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_SERVERS 8
#define MAX_CLIENTS 1024
#define MAX_FAILURES 10000

enum { CREATE, RUN, ANSWER };

typedef struct {
    const char *p, *e; /* [p, e) */
} Span;

typedef struct {
    int fd;
    char *buf;
    size_t len, cap;
} Conn;

typedef struct {
    Conn conns[MAX_SERVERS];
    int phase, server;
    bool active;
    char session[128];
    double asked_at;
} Client;

typedef struct {
    long runs, requests;
    double *answers;
    size_t answered, answers_cap;
    char *failures[MAX_FAILURES];
    long failed;
} Load;

static int ports[MAX_SERVERS], servers, clients_n, turn, epfd;
static bool affinity; /* client i keeps to server i mod N */
static Client clients[MAX_CLIENTS];
static Load *load;
static long target;
static double deadline;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static double cpu(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* --- just enough JSON: find members and elements, compare strings ------------------ */

static const char *skip_ws(const char *p, const char *e) {
    while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
    return p;
}

static const char *value_end(const char *p, const char *e) {
    if (p >= e) return NULL;
    if (*p == '"') {
        for (p++; p < e; p++) {
            if (*p == '\\') p++;
            else if (*p == '"') return p + 1;
        }
        return NULL;
    }
    if (*p == '{' || *p == '[') {
        int depth = 0;
        for (; p < e; p++) {
            if (*p == '"') {
                p = value_end(p, e);
                if (p == NULL) return NULL;
                p--;
            } else if (*p == '{' || *p == '[') depth++;
            else if ((*p == '}' || *p == ']') && --depth == 0) return p + 1;
        }
        return NULL;
    }
    while (p < e && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n') p++;
    return p;
}

/* The values of an array's elements or an object's members, one by one: `at` starts
   just after the opening bracket; returns false at the end (or on malformed input). */
static bool next_item(const char **at, const char *e, bool object, Span *key, Span *value) {
    const char *p = skip_ws(*at, e);
    if (p < e && *p == ',') p = skip_ws(p + 1, e);
    if (p >= e || *p == '}' || *p == ']') return false;
    if (object) {
        const char *end = value_end(p, e);
        if (end == NULL || *p != '"') return false;
        *key = (Span){p + 1, end - 1};
        p = skip_ws(end, e);
        if (p >= e || *p != ':') return false;
        p = skip_ws(p + 1, e);
    }
    const char *end = value_end(p, e);
    if (end == NULL) return false;
    *value = (Span){p, end};
    *at = end;
    return true;
}

static bool equals(Span s, const char *text) {
    size_t n = strlen(text);
    return (size_t)(s.e - s.p) == n && memcmp(s.p, text, n) == 0;
}

static bool member(Span object, const char *name, Span *out) {
    if (object.p >= object.e || *object.p != '{') return false;
    const char *at = object.p + 1;
    Span key, value;
    while (next_item(&at, object.e, true, &key, &value))
        if (equals(key, name)) {
            *out = value;
            return true;
        }
    return false;
}

static bool element(Span array, bool last, Span *out) {
    if (array.p >= array.e || *array.p != '[') return false;
    const char *at = array.p + 1;
    Span key, value;
    bool found = false;
    while (next_item(&at, array.e, false, &key, &value)) {
        *out = value;
        found = true;
        if (!last) break;
    }
    return found;
}

static bool is_string(Span value, const char *text) {
    return value.e - value.p >= 2 && *value.p == '"' && equals((Span){value.p + 1, value.e - 1}, text);
}

/* --- the load ------------------------------------------------------------------------ */

static void fail(const char *format, ...) {
    char text[600];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof text, format, args);
    va_end(args);
    if (load->failed < MAX_FAILURES) load->failures[load->failed] = strdup(text);
    load->failed++;
}

static void print_json_string(const char *s) {
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20 || c >= 0x7f) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

static void summary(double elapsed, double spent) {
    printf("{\"runs\": %ld, \"requests\": %ld, \"answers\": [", load->runs, load->requests);
    for (size_t i = 0; i < load->answered; i++) printf(i ? ", %.9f" : "%.9f", load->answers[i]);
    printf("], \"failures\": [");
    long listed = load->failed < MAX_FAILURES ? load->failed : MAX_FAILURES;
    for (long i = 0; i < listed; i++) {
        if (i) printf(", ");
        print_json_string(load->failures[i]);
    }
    printf("], \"elapsed\": %.9f, \"client_cpu\": %.9f}\n", elapsed, spent);
    fflush(stdout);
}

static void close_conn(Conn *conn) {
    if (conn->fd >= 0) close(conn->fd);
    conn->fd = -1;
    conn->len = 0;
}

static bool send_request(int index, const char *path, const char *body) {
    Client *client = &clients[index];
    int server = affinity ? index % servers : turn;
    if (!affinity) turn = (turn + 1) % servers;
    Conn *conn = &client->conns[server];
    if (conn->fd < 0) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(ports[server])};
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
            fail("ConnectionError: cannot connect to 127.0.0.1:%d: %s", ports[server], strerror(errno));
            close(fd);
            return false;
        }
        struct epoll_event event = {.events = EPOLLIN, .data.u64 = (uint64_t)index * MAX_SERVERS + server};
        epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event);
        conn->fd = fd;
    }
    char request[1024];
    int n = snprintf(request, sizeof request,
                     "POST %s HTTP/1.1\r\nhost: 127.0.0.1:%d\r\ncontent-type: application/json\r\n"
                     "content-length: %zu\r\n\r\n%s",
                     path, ports[server], strlen(body), body);
    for (int sent = 0; sent < n;) {
        ssize_t wrote = write(conn->fd, request + sent, n - sent);
        if (wrote <= 0) {
            fail("ConnectionError: writing to 127.0.0.1:%d: %s", ports[server], strerror(errno));
            close_conn(conn);
            return false;
        }
        sent += wrote;
    }
    client->server = server;
    return true;
}

static void start_run(int index) {
    Client *client = &clients[index];
    client->active = false;
    while (load->runs + load->failed < target && now() < deadline) {
        client->phase = CREATE;
        if (send_request(index, "/apps/approve/users/u/sessions", "{}")) {
            client->active = true;
            return;
        }
    }
}

static void refuse(const char *call, int status, Span body) {
    long n = body.e - body.p;
    const char *tail = n > 300 ? body.e - 300 : body.p;
    fail("ResponseError: %s answered %d: %.*s", call, status, (int)(body.e - tail), tail);
}

/* A whole response arrived for client `index`: check it and send the run's next request
   (or start the next run). */
static void answered(int index, int status, Span body) {
    Client *client = &clients[index];
    char path[512], text[512];
    Span value, event, part;
    switch (client->phase) {
    case CREATE:
        if (status != 200 || !member(body, "id", &value) || *value.p != '"' ||
            value.e - value.p - 2 >= (long)sizeof client->session ||
            memchr(value.p, '\\', value.e - value.p) != NULL) {
            refuse("create", status, body);
            break;
        }
        snprintf(client->session, sizeof client->session, "%.*s", (int)(value.e - value.p - 2), value.p + 1);
        snprintf(text, sizeof text,
                 "{\"appName\":\"approve\",\"userId\":\"u\",\"sessionId\":\"%s\","
                 "\"newMessage\":{\"role\":\"user\",\"parts\":[{\"text\":\"taxi\"}]}}",
                 client->session);
        client->phase = RUN;
        if (send_request(index, "/run", text)) return;
        break;
    case RUN:
        if (status != 200 || !element(body, true, &event) || !member(event, "content", &value) ||
            !member(value, "parts", &value) || !element(value, false, &part) ||
            !member(part, "functionCall", &value) || !member(value, "name", &value) ||
            !is_string(value, "adk_request_input")) {
            refuse("run", status, body);
            break;
        }
        snprintf(path, sizeof path, "/apps/approve/users/u/sessions/%s/interrupts/ok/respond", client->session);
        client->phase = ANSWER;
        client->asked_at = now();
        if (send_request(index, path, "{\"response\":true}")) return;
        break;
    case ANSWER: {
        double took = now() - client->asked_at;
        if (load->answered == load->answers_cap) {
            load->answers_cap = load->answers_cap ? load->answers_cap * 2 : 4096;
            load->answers = realloc(load->answers, load->answers_cap * sizeof(double));
        }
        load->answers[load->answered++] = took;
        if (status != 200 || !element(body, true, &event) || !member(event, "output", &value) ||
            !is_string(value, "approved")) {
            refuse("answer", status, body);
            break;
        }
        load->requests += 3;
        load->runs++;
        break;
    }
    }
    start_run(index);
}

/* Data arrived on a connection of client `index`: once a whole response is in, handle it. */
static void readable(int index, int server) {
    Client *client = &clients[index];
    Conn *conn = &client->conns[server];
    if (conn->cap - conn->len < 65536) {
        conn->cap = conn->cap * 2 + 65536;
        conn->buf = realloc(conn->buf, conn->cap);
    }
    ssize_t got = read(conn->fd, conn->buf + conn->len, conn->cap - conn->len - 1);
    if (got <= 0) {
        close_conn(conn);
        if (client->active && client->server == server) {
            fail("ConnectionError: the server closed the connection (%s)", got ? strerror(errno) : "EOF");
            start_run(index);
        }
        return;
    }
    conn->len += got;
    conn->buf[conn->len] = 0;
    char *head_end = memmem(conn->buf, conn->len, "\r\n\r\n", 4);
    if (head_end == NULL) return;
    size_t length = 0;
    bool found = false;
    for (char *line = strstr(conn->buf, "\r\n"); line && line < head_end; line = strstr(line + 2, "\r\n"))
        if (strncasecmp(line + 2, "content-length:", 15) == 0) {
            length = strtoul(line + 17, NULL, 10);
            found = true;
        }
    if (!found) {
        fail("ResponseError: no content-length in %.300s", conn->buf);
        close_conn(conn);
        start_run(index);
        return;
    }
    char *body = head_end + 4;
    if ((size_t)(conn->buf + conn->len - body) < length) return;
    int status = conn->len > 12 ? atoi(conn->buf + 9) : 0;
    /* The response leaves the connection's buffer before the next request is sent: a
       write that fails closes the connection. */
    static char *copy;
    static size_t copy_cap;
    if (copy_cap < length + 1) {
        copy_cap = length + 1;
        copy = realloc(copy, copy_cap);
    }
    memcpy(copy, body, length);
    copy[length] = 0;
    size_t used = body + length - conn->buf;
    memmove(conn->buf, conn->buf + used, conn->len - used);
    conn->len -= used;
    answered(index, status, (Span){copy, copy + length});
}

static void drive(Load *into, long runs, double until) {
    load = into;
    target = runs;
    deadline = until;
    for (int i = 0; i < clients_n; i++) start_run(i);
    struct epoll_event events[64];
    for (;;) {
        bool any = false;
        for (int i = 0; i < clients_n && !any; i++) any = clients[i].active;
        if (!any) return;
        int n = epoll_wait(epfd, events, 64, 1000);
        for (int i = 0; i < n; i++) {
            int index = (int)(events[i].data.u64 / MAX_SERVERS), server = (int)(events[i].data.u64 % MAX_SERVERS);
            if (clients[index].conns[server].fd >= 0) readable(index, server);
        }
    }
}

int main(int argc, char **argv) {
    long runs = 1000, warm = 32;
    double seconds = 60;
    clients_n = 16;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--clients") == 0 && i + 1 < argc) clients_n = atoi(argv[++i]);
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = atol(argv[++i]);
        else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--warm") == 0 && i + 1 < argc) warm = atol(argv[++i]);
        else if (strcmp(argv[i], "--affinity") == 0) affinity = true;
        else {
            int port = 0, end = 0;
            if (servers == MAX_SERVERS || sscanf(argv[i], "http://127.0.0.1:%d%n", &port, &end) != 1 ||
                (argv[i][end] != 0 && strcmp(argv[i] + end, "/") != 0) || port <= 0 || port > 65535) {
                fprintf(stderr, "the load goes to 127.0.0.1 only, with a port, to at most %d servers: got %s\n",
                        MAX_SERVERS, argv[i]);
                return 2;
            }
            ports[servers++] = port;
        }
    }
    if (servers == 0 || clients_n < 1 || clients_n > MAX_CLIENTS) {
        fprintf(stderr, "usage: http_load URL [URL ...] [--clients 1-%d] [--runs N] [--seconds S] [--warm N] "
                        "[--affinity]\n",
                MAX_CLIENTS);
        return 2;
    }
    epfd = epoll_create1(0);
    for (int i = 0; i < clients_n; i++)
        for (int s = 0; s < MAX_SERVERS; s++) clients[i].conns[s].fd = -1;
    static Load warmed, measured;
    drive(&warmed, warm, now() + 30);
    if (warmed.failed) {
        summary(0, 0);
        return 0;
    }
    printf("measuring\n");
    fflush(stdout);
    double spent = cpu(), started = now();
    drive(&measured, runs, started + seconds);
    summary(now() - started, cpu() - spent);
    return 0;
}
