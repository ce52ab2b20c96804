/*
 * reins-enter: runs one command in a local sandbox, in one process instead of the chain
 * sh (confine) -> nsenter -> unshare -> setpriv -> sh (init) it replaces (see enter-helper.ts).
 *
 *   reins-enter -t PID -u UID -g GID [-P] [-j FILE]... [-l RES=VALUE]... -C CWD -- ARGV...
 *   reins-enter [-j FILE]... [-l RES=VALUE]... -- ARGV...     (confine only: a keeper's bwrap)
 *
 * On the host, as the runner: joins each control group FILE (writes "0"), sets the rlimits
 * (RES: nofile, cpu, as, fsize, nproc; hard = soft; as and fsize in bytes), then joins the ipc,
 * uts, net, pid and mount namespaces of PID and its root and working directory (nsenter -m -n -i
 * -u -p -r -w). Failures there exit 125. Without -t it execs ARGV (an absolute path) once
 * confined, as the runner, in the runner's namespaces.
 * It then forks: the child is in PID's pid namespace. With -P that child makes a pid namespace of
 * its own and forks its init (parent-death signal SIGKILL); without, the child is the init. The
 * init drops to UID/GID (no supplementary groups, empty bounding, inheritable and ambient sets,
 * no_new_privs), changes to CWD (126 when it cannot), runs ARGV as its child (PATH lookup: 127
 * when not found, 126 when not executable), forwards TERM INT HUP QUIT USR1 USR2 to it, reaps
 * orphans, and exits with its status (128 + n when it died of signal n). Each parent exits with
 * its child's status, or dies of the same signal. So the init is at depth 2 (-P) of the process
 * this program starts as, as with the chain: killing it makes the kernel kill its namespace.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_JOINS 16
#define MAX_LIMITS 8

static void die(int code, const char *what, const char *arg) {
  fprintf(stderr, "reins-enter: %s%s%s: %s\n", what, arg ? " " : "", arg ? arg : "", strerror(errno));
  _exit(code);
}

static void usage(void) {
  fputs("usage: reins-enter -t PID -u UID -g GID [-P] [-j FILE]... [-l RES=VALUE]... -C CWD -- ARGV...\n", stderr);
  _exit(125);
}

static long number(const char *s) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < 0) usage();
  return v;
}

static void join_group(const char *file) {
  int fd = open(file, O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write(fd, "0", 1) != 1) die(125, "cannot join the control group", file);
  close(fd);
}

static void set_limit(const char *spec) {
  static const struct { const char *name; int resource; } names[] = {
    {"nofile", RLIMIT_NOFILE}, {"cpu", RLIMIT_CPU}, {"as", RLIMIT_AS}, {"fsize", RLIMIT_FSIZE}, {"nproc", RLIMIT_NPROC},
  };
  const char *eq = strchr(spec, '=');
  if (!eq) usage();
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (strlen(names[i].name) != (size_t)(eq - spec) || strncmp(spec, names[i].name, eq - spec)) continue;
    struct rlimit r = {(rlim_t)number(eq + 1), (rlim_t)number(eq + 1)};
    if (setrlimit(names[i].resource, &r)) die(125, "cannot set the limit", spec);
    return;
  }
  usage();
}

static int open_proc(long pid, const char *name, int flags) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld/%s", pid, name);
  int fd = open(path, flags | O_CLOEXEC);
  if (fd < 0) die(125, "cannot open", path);
  return fd;
}

/* Waits for `child` and ends this process the way it ended. */
static void follow(pid_t child) {
  int status;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) die(125, "cannot wait for", "the command");
  }
  if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
  int sig = WTERMSIG(status);
  signal(sig, SIG_DFL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  sigprocmask(SIG_UNBLOCK, &one, NULL);
  kill(getpid(), sig);
  _exit(128 + sig);
}

static void drop_privileges(uid_t uid, gid_t gid) {
  if (setgroups(0, NULL)) die(125, "cannot clear the groups", NULL);
  if (setresgid(gid, gid, gid)) die(125, "cannot set the group", NULL);
  for (int cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) && errno != EINVAL) die(125, "cannot drop the bounding set", NULL);
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) && errno != EINVAL) die(125, "cannot clear the ambient set", NULL);
  if (setresuid(uid, uid, uid)) die(125, "cannot set the user", NULL);
  struct __user_cap_header_struct head = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct none[2];
  memset(none, 0, sizeof none);
  if (syscall(SYS_capset, &head, none)) die(125, "cannot clear the capabilities", NULL);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) die(125, "cannot set no_new_privs", NULL);
}

static const int forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
static volatile pid_t command_pid;

static void forward(int sig) {
  if (command_pid > 0) kill(command_pid, sig);
}

/* The init: runs argv as its child, forwards signals, reaps orphans, exits with its status. */
static void run_init(uid_t uid, gid_t gid, const char *cwd, char **argv) {
  drop_privileges(uid, gid);
  if (chdir(cwd)) {
    fprintf(stderr, "reins-init: cd: can't cd to %s\n", cwd);
    _exit(126);
  }
  unsetenv("OLDPWD");
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &old);
  pid_t child = fork();
  if (child < 0) die(125, "cannot fork", NULL);
  if (child == 0) {
    sigprocmask(SIG_SETMASK, &old, NULL);
    execvp(argv[0], argv);
    int code = errno == ENOENT || errno == ENOTDIR ? 127 : 126;
    fprintf(stderr, "reins-init: %s: %s\n", argv[0], code == 127 ? "not found" : strerror(errno));
    _exit(code);
  }
  command_pid = child;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = forward;
  for (size_t i = 0; i < sizeof forwarded / sizeof forwarded[0]; i++) sigaction(forwarded[i], &sa, NULL);
  sigprocmask(SIG_SETMASK, &old, NULL);
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      _exit(125);
    }
    if (pid != child) continue;
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
}

int main(int argc, char **argv) {
  long target = -1, uid = -1, gid = -1;
  int own_pid_namespace = 0, njoins = 0, nlimits = 0;
  const char *cwd = NULL, *joins[MAX_JOINS], *limits[MAX_LIMITS];
  int opt;
  while ((opt = getopt(argc, argv, "+t:u:g:Pj:l:C:")) != -1) {
    switch (opt) {
      case 't': target = number(optarg); break;
      case 'u': uid = number(optarg); break;
      case 'g': gid = number(optarg); break;
      case 'P': own_pid_namespace = 1; break;
      case 'j': if (njoins == MAX_JOINS) usage(); joins[njoins++] = optarg; break;
      case 'l': if (nlimits == MAX_LIMITS) usage(); limits[nlimits++] = optarg; break;
      case 'C': cwd = optarg; break;
      default: usage();
    }
  }
  if (optind >= argc) usage();
  char **command = argv + optind;
  int confine_only = target == -1 && uid == -1 && gid == -1 && !cwd && !own_pid_namespace;
  if (!confine_only && (target <= 0 || uid < 0 || gid < 0 || !cwd)) usage();

  for (int i = 0; i < njoins; i++) join_group(joins[i]);
  for (int i = 0; i < nlimits; i++) set_limit(limits[i]);
  if (confine_only) {
    execv(command[0], command);
    die(127, "cannot run", command[0]);
  }

  static const struct { const char *name; int type; } spaces[] = {
    {"ns/ipc", CLONE_NEWIPC}, {"ns/uts", CLONE_NEWUTS}, {"ns/net", CLONE_NEWNET}, {"ns/pid", CLONE_NEWPID}, {"ns/mnt", CLONE_NEWNS},
  };
  int fds[5];
  for (int i = 0; i < 5; i++) fds[i] = open_proc(target, spaces[i].name, O_RDONLY);
  int root = open_proc(target, "root", O_RDONLY | O_DIRECTORY);
  int wd = open_proc(target, "cwd", O_RDONLY | O_DIRECTORY);
  for (int i = 0; i < 5; i++) {
    if (setns(fds[i], spaces[i].type)) die(125, "cannot join the namespace", spaces[i].name);
    close(fds[i]);
  }
  if (fchdir(root) || chroot(".")) die(125, "cannot change the root", NULL);
  if (fchdir(wd)) die(125, "cannot change to the working directory", NULL);
  close(root);
  close(wd);

  signal(SIGCHLD, SIG_DFL);
  pid_t child = fork();
  if (child < 0) die(125, "cannot fork", NULL);
  if (child > 0) follow(child);
  if (!own_pid_namespace) run_init((uid_t)uid, (gid_t)gid, cwd, command);

  /* In the sandbox's pid namespace: a namespace of the command's own, whose init dies with us. */
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  if (unshare(CLONE_NEWPID)) die(125, "cannot make a pid namespace", NULL);
  /* The parent holds the write end: the init sees it closed when the parent died before the
     parent-death signal was armed (pid 1 has no parent to ask getppid about). */
  int alive[2];
  if (pipe2(alive, O_CLOEXEC)) die(125, "cannot make a pipe", NULL);
  pid_t init = fork();
  if (init < 0) die(125, "cannot fork", NULL);
  if (init > 0) follow(init);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0)) die(125, "cannot set the parent-death signal", NULL);
  close(alive[1]);
  struct pollfd gone = {alive[0], POLLIN, 0};
  if (poll(&gone, 1, 0) != 0) _exit(125);
  close(alive[0]);
  run_init((uid_t)uid, (gid_t)gid, cwd, command);
  return 125;
}
