/*
 * reins-spawn: starts the local provider's processes (keepers and commands) for the runner, so
 * the runner never forks itself (spawner.ts). A fork copies the forking process's page tables:
 * node's spawn blocks the runner's event loop for about 1 ms per 50 MB it holds, this program's
 * fork for well under a millisecond whatever the runner holds.
 *
 *   reins-spawn SOCKET
 *
 * Listens on the Unix socket SOCKET (in a directory only the runner can enter, made for it: it
 * removes both at the end), says "listening" on stdout, and lives until its stdin (a pipe from
 * the runner) ends or it is told to end (SIGTERM). Each connection is one
 * request, handled by a child of its own: a little-endian u32 length, then that many bytes of
 * NUL-terminated fields: KIND, FD3, ARGC, ARGV..., ENVC, ENV... ARGV[0] is an absolute path; the
 * child starts a new session.
 *   KIND "keeper": the program runs with the connection as stdin, stdout and stderr and the file
 *     FD3 (created, 0600) as fd 3; the connection first carries "pid N\n", then the output.
 *   KIND "command": the program runs on pipes; the child relays them in frames (u8 type, u32 LE
 *     length, payload): 0 the program's pid, 1 stdout, 2 stderr, 3 its end once its output is
 *     closed ("N": exit status, 128 + n for signal n), 4 why it could not start. Bytes the runner
 *     sends after the request are the program's stdin; the runner's half-close closes it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_REQUEST (1 << 20)
#define MAX_FIELDS 4096

static int read_exact(int fd, void *buf, size_t n) {
  for (size_t at = 0; at < n;) {
    ssize_t r = read(fd, (char *)buf + at, n - at);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    at += (size_t)r;
  }
  return 0;
}

static int write_all(int fd, const void *buf, size_t n) {
  for (size_t at = 0; at < n;) {
    ssize_t w = write(fd, (const char *)buf + at, n - at);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    at += (size_t)w;
  }
  return 0;
}

static int send_frame(int fd, uint8_t type, const void *data, uint32_t n) {
  uint8_t head[5] = {type, (uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24)};
  return write_all(fd, head, 5) || write_all(fd, data, n) ? -1 : 0;
}

static void send_text(int fd, uint8_t type, const char *text) {
  send_frame(fd, type, text, (uint32_t)strlen(text));
}

/* Signals as a fresh process has them. */
static void reset_signals(void) {
  for (int s = 1; s < NSIG; s++) signal(s, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
}

struct request {
  char *kind, *fd3, **argv, **env;
};

static int parse(char *buf, size_t n, struct request *r) {
  static char *fields[MAX_FIELDS + 2];
  size_t count = 0;
  for (size_t at = 0; at < n && count < MAX_FIELDS;) {
    char *end = memchr(buf + at, 0, n - at);
    if (!end) return -1;
    fields[count++] = buf + at;
    at = (size_t)(end - buf) + 1;
  }
  if (count < 4) return -1;
  r->kind = fields[0];
  r->fd3 = fields[1];
  long argc = strtol(fields[2], NULL, 10);
  if (argc < 1 || (size_t)argc + 4 > count) return -1;
  r->argv = fields + 3;
  long envc = strtol(fields[3 + argc], NULL, 10);
  if (envc < 0 || (size_t)(4 + argc + envc) != count) return -1;
  /* argv ends where ENVC stood, env after the last field. */
  fields[3 + argc] = NULL;
  r->env = fields + 4 + argc;
  fields[count] = NULL;
  return r->argv[0][0] == '/' ? 0 : -1;
}

static void run_keeper(int conn, struct request *r) {
  int info = open(r->fd3, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (info < 0 || (info == 3 ? fcntl(3, F_SETFD, 0) : dup2(info, 3) != 3)) _exit(126);
  if (dup2(conn, 0) != 0 || dup2(conn, 1) != 1 || dup2(conn, 2) != 2) _exit(126);
  char line[32];
  snprintf(line, sizeof line, "pid %d\n", getpid());
  if (write_all(1, line, strlen(line))) _exit(126);
  reset_signals();
  execve(r->argv[0], r->argv, r->env);
  dprintf(2, "cannot run %s: %s\n", r->argv[0], strerror(errno));
  _exit(127);
}

static void run_command(int conn, struct request *r) {
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
    send_text(conn, 4, strerror(errno));
    _exit(126);
  }
  pid_t pid = fork();
  if (pid < 0) {
    send_text(conn, 4, strerror(errno));
    _exit(126);
  }
  if (pid == 0) {
    if (dup2(in[0], 0) != 0 || dup2(out[1], 1) != 1 || dup2(err[1], 2) != 2) _exit(126);
    reset_signals();
    execve(r->argv[0], r->argv, r->env);
    dprintf(2, "cannot run %s: %s\n", r->argv[0], strerror(errno));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  signal(SIGPIPE, SIG_IGN);
  char text[32];
  snprintf(text, sizeof text, "%d", pid);
  send_text(conn, 0, text);
  /* stdin is written without blocking: a program that writes before it reads must not stall
     the relay of its output. The connection is read only when what it sent last is written. */
  int stdin_fd = in[1];
  fcntl(stdin_fd, F_SETFL, O_NONBLOCK);
  static char buf[65536], pending[65536];
  size_t pending_at = 0, pending_n = 0;
  struct pollfd fds[4] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}, {conn, POLLIN, 0}, {-1, POLLOUT, 0}};
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    fds[2].fd = pending_n == 0 && fds[2].events ? conn : -1;
    fds[3].fd = pending_n > 0 ? stdin_fd : -1;
    if (poll(fds, 4, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; i++) {
      if (fds[i].fd < 0 || !fds[i].revents) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
      } else if (send_frame(conn, (uint8_t)(i + 1), buf, (uint32_t)n)) {
        _exit(0); /* the runner stopped listening */
      }
    }
    if (fds[2].fd >= 0 && fds[2].revents) {
      ssize_t n = read(conn, pending, sizeof pending);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        /* The runner half-closed (end of stdin) or went away. */
        fds[2].events = 0;
        if (stdin_fd >= 0) close(stdin_fd);
        stdin_fd = -1;
      } else if (stdin_fd >= 0) {
        pending_at = 0;
        pending_n = (size_t)n;
      }
    }
    if (pending_n > 0 && stdin_fd >= 0) {
      ssize_t w = write(stdin_fd, pending + pending_at, pending_n);
      if (w > 0) {
        pending_at += (size_t)w;
        pending_n -= (size_t)w;
      } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
        close(stdin_fd); /* the program closed its stdin: the rest is dropped */
        stdin_fd = -1;
        pending_n = 0;
      }
    } else {
      pending_n = 0;
    }
  }
  /* Its output is closed: it has ended, or it reads no more than what it has (end of stdin). */
  if (stdin_fd >= 0) close(stdin_fd);
  int status;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) _exit(0);
  }
  snprintf(text, sizeof text, "%d", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  send_text(conn, 3, text);
  /* The runner may still be writing stdin the program never read: read it to the runner's end
     (it ends once it has the exit frame), so that its writes never meet a closed connection and
     lose the frames before them. Bounded, in case the runner never ends. */
  shutdown(conn, SHUT_WR);
  alarm(60);
  for (;;) {
    ssize_t n = read(conn, buf, sizeof buf);
    if (n == 0 || (n < 0 && errno != EINTR)) break;
  }
  _exit(0);
}

static volatile sig_atomic_t terminated;

static void on_term(int sig) {
  (void)sig;
  terminated = 1;
}

static void handle(int conn) {
  signal(SIGCHLD, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  setsid();
  alarm(30); /* a request that never arrives */
  uint8_t head[4];
  if (read_exact(conn, head, 4)) _exit(0);
  uint32_t n = head[0] | head[1] << 8 | head[2] << 16 | (uint32_t)head[3] << 24;
  if (n == 0 || n > MAX_REQUEST) _exit(0);
  char *buf = malloc(n);
  if (!buf || read_exact(conn, buf, n)) _exit(0);
  alarm(0);
  struct request r;
  if (parse(buf, n, &r)) {
    send_text(conn, 4, "malformed request");
    _exit(0);
  }
  if (!strcmp(r.kind, "keeper")) run_keeper(conn, &r);
  if (!strcmp(r.kind, "command")) run_command(conn, &r);
  send_text(conn, 4, "unknown request");
  _exit(0);
}

int main(int argc, char **argv) {
  if (argc != 2 || strlen(argv[1]) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
    fputs("usage: reins-spawn SOCKET\n", stderr);
    return 2;
  }
  umask(077);
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  strcpy(addr.sun_path, argv[1]);
  if (s < 0 || bind(s, (struct sockaddr *)&addr, sizeof addr) || listen(s, 4096)) {
    perror("reins-spawn: cannot listen");
    return 1;
  }
  signal(SIGCHLD, SIG_IGN); /* children are reaped by the kernel */
  signal(SIGPIPE, SIG_IGN);
  struct sigaction stop;
  memset(&stop, 0, sizeof stop);
  stop.sa_handler = on_term; /* no SA_RESTART: poll returns EINTR */
  sigaction(SIGTERM, &stop, NULL);
  if (write_all(1, "listening\n", 10)) return 1;
  int null = open("/dev/null", O_WRONLY);
  if (null >= 0) dup2(null, 1);
  struct pollfd fds[2] = {{0, POLLIN, 0}, {s, POLLIN, 0}};
  char scrap[256];
  for (;;) {
    if (terminated) break;
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents) {
      ssize_t n = read(0, scrap, sizeof scrap);
      if (n == 0 || (n < 0 && errno != EINTR)) break; /* the runner is gone */
    }
    if (fds[1].revents & POLLIN) {
      int conn = accept4(s, NULL, NULL, SOCK_CLOEXEC);
      if (conn < 0) continue;
      pid_t pid = fork();
      if (pid == 0) {
        close(s);
        if (null >= 0) dup2(null, 0); /* not the runner's pipe: its end is the spawner's alone to see */
        handle(conn);
      }
      close(conn);
    }
  }
  unlink(argv[1]);
  /* The directory was made for it alone (spawner.ts). */
  char *slash = strrchr(argv[1], '/');
  if (slash && slash != argv[1]) {
    *slash = 0;
    rmdir(argv[1]);
  }
  return 0;
}
