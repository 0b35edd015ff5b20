# The in-sandbox runner of ragen's code sandbox (package
# ragen/env/deepcoder/sandbox). It is run as
#
#     /usr/bin/python3 -I -S -B -c <this file> <mode> <limits JSON>
#
# with the job on stdin and fd 3 as its report channel. In mode "ns" it is
# PID 1 of fresh user, PID, network, mount, IPC and UTS namespaces: it
# builds a new root on a tmpfs (read-only binds of /usr and the library
# dirs, a few device nodes, an empty /work and /tmp), pivots into it,
# detaches the host tree, and drops every capability before any untrusted
# code runs. In mode "weak" (no namespaces) it only applies rlimits. In both
# modes it first closes every inherited descriptor but 0-3, and a seccomp
# filter refuses memfd_create and System V shared memory and queues.
#
# First a forked child with the same limits evaluates the functional tests'
# arguments and sends them back as JSON (upstream does this before its
# child starts; an unserialisable argument fails the whole job). Then
# each test runs in a forked child with rlimits (CPU, address space, file
# size, process count, open files), its stdout and stderr captured through
# pipes up to a byte cap. Expected outputs never enter the sandbox: the
# runner reports what the program printed or returned and the Go side
# judges it. After each test every leftover process of the namespace is
# killed (kill(-1) from PID 1). The report is one JSON object per line.
import ctypes, json, os, select, signal, sys, time

MODE = sys.argv[1]
LIM = json.loads(sys.argv[2])
REPORT = 3


def close_inherited_fds():
    # First of all: close every descriptor but stdin, stdout, stderr and the
    # report pipe. The host may hold files, directories and sockets without
    # close-on-exec (libtorch, Gloo); none may reach the program.
    try:
        top = max(int(n) for n in os.listdir("/proc/self/fd"))
    except (OSError, ValueError):
        top = os.sysconf("SC_OPEN_MAX")
    os.closerange(REPORT + 1, top + 1)


close_inherited_fds()


def report(obj):
    data = (json.dumps(obj) + "\n").encode()
    while data:
        n = os.write(REPORT, data)
        data = data[n:]


libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC = 32, 1024, 2048, 4096, 16384
MS_PRIVATE, MS_RELATIME = 1 << 18, 1 << 21


def fail(msg):
    report({"setup_error": msg})
    sys.exit(0)


def mount(src, dst, fstype, flags, data=None):
    b = lambda s: None if s is None else s.encode()
    if libc.mount(b(src), b(dst), b(fstype), flags, b(data)) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "mount %s on %s: %s" % (src, dst, os.strerror(e)))


def locked_flags(path):
    # A read-only remount of a bind must keep the flags the original mount
    # is locked with (nosuid, nodev, noexec, atime flags).
    f = os.statvfs(path).f_flag
    out = 0
    for st, ms in ((2, MS_NOSUID), (4, MS_NODEV), (8, MS_NOEXEC), (1024, MS_NOATIME), (2048, MS_NODIRATIME), (4096, MS_RELATIME)):
        if f & st:
            out |= ms
    return out


def bind_ro(src, dst):
    mount(src, dst, None, MS_BIND | MS_REC)
    mount(None, dst, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | locked_flags(src))


def limit_sysv_ipc():
    # System V shared memory and message queues live outside every
    # process's address space and resident memory, so neither RLIMIT_AS nor
    # the memory cap sees them: allow none in this IPC namespace. Best
    # effort (a container's /proc/sys may be read-only); seccomp refuses
    # the calls as well.
    for k in ("shmmax", "shmall", "shmmni", "msgmni"):
        try:
            with open("/proc/sys/kernel/" + k, "w") as f:
                f.write("0")
        except OSError:
            pass


def build_root():
    root = os.getcwd()  # the fresh, empty host directory made for this run
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=%dk,mode=755" % (LIM["tmpfs_bytes"] // 1024))
    os.chdir(root)
    for d in ("usr", "dev", "proc", "tmp", "work", "etc", ".old"):
        os.mkdir(d)
    os.chmod("tmp", 0o1777)
    os.chmod("work", 0o777)
    bind_ro("/usr", "usr")
    for d in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        p = "/" + d
        if os.path.islink(p):
            os.symlink(os.readlink(p), d)
        elif os.path.isdir(p):
            os.mkdir(d)
            bind_ro(p, d)
    for dev in ("null", "zero", "random", "urandom"):
        open("dev/" + dev, "w").close()
        mount("/dev/" + dev, "dev/" + dev, None, MS_BIND)
    limit_sysv_ipc()
    try:
        mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError:
        pass  # a masked host /proc forbids a new one; Python does not need it
    else:
        # The namespace's root user may write its IPC namespace's sysctls
        # without any capability: /proc/sys must be read-only.
        try:
            bind_ro("proc/sys", "proc/sys")
        except OSError as e:
            if libc.umount2(b"proc", 2) != 0:
                fail("read-only /proc/sys: %s; umount /proc: %s" % (e, os.strerror(ctypes.get_errno())))
    SYS_pivot_root = {"x86_64": 155, "aarch64": 41}.get(os.uname().machine)
    if SYS_pivot_root is None:
        fail("unsupported machine " + os.uname().machine)
    if libc.syscall(SYS_pivot_root, b".", b".old") != 0:
        e = ctypes.get_errno()
        fail("pivot_root: " + os.strerror(e))
    os.chdir("/")
    if libc.umount2(b"/.old", 2) != 0:  # MNT_DETACH
        fail("umount old root: " + os.strerror(ctypes.get_errno()))
    os.rmdir("/.old")
    mount(None, "/", None, MS_REMOUNT | MS_NOSUID | MS_NODEV | MS_RDONLY)
    # /work and /tmp need their own writable mounts now that / is read-only.
    mount("tmpfs", "/work", "tmpfs", MS_NOSUID | MS_NODEV, "size=%dk,mode=777" % (LIM["tmpfs_bytes"] // 1024))
    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=%dk,mode=1777" % (LIM["tmpfs_bytes"] // 1024))
    os.chdir("/work")


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_privileges():
    PR_SET_NO_NEW_PRIVS, PR_SET_DUMPABLE, PR_CAPBSET_DROP = 38, 4, 24
    for cap in range(64):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    hdr = CapHeader(0x20080522, 0)
    data = (CapData * 2)()
    if libc.capset(ctypes.byref(hdr), data) != 0:
        fail("capset: " + os.strerror(ctypes.get_errno()))
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        fail("no_new_privs: " + os.strerror(ctypes.get_errno()))
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


class SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]


# audit arch, and the numbers of memfd_create, shmget, shmat, msgget
SECCOMP_ARCH = {"x86_64": (0xC000003E, (319, 29, 30, 68)), "aarch64": (0xC00000B7, (279, 194, 196, 186))}


def refuse_shared_memory():
    # A seccomp filter makes memfd_create, shmget, shmat and msgget fail
    # with EPERM: their memory is counted by no process (an unmapped memfd
    # is not resident anywhere). /dev/shm does not exist in the new root,
    # and /tmp and /work are size-capped tmpfs mounts. Calls of another ABI
    # (i386 via int 0x80, x32) fail with ENOSYS.
    arch = SECCOMP_ARCH.get(os.uname().machine)
    if arch is None:
        fail("seccomp: unsupported machine " + os.uname().machine)
    audit, nrs = arch
    LD_W_ABS, JEQ, JGE, RET = 0x20, 0x15, 0x35, 0x06
    ALLOW, EPERM, ENOSYS = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38
    n = len(nrs)
    prog = [(LD_W_ABS, 0, 0, 4), (JEQ, 1, 0, audit), (RET, 0, 0, ENOSYS),
            (LD_W_ABS, 0, 0, 0), (JGE, n + 1, 0, 0x40000000)]
    prog += [(JEQ, n - i, 0, nr) for i, nr in enumerate(nrs)]
    prog += [(RET, 0, 0, ALLOW), (RET, 0, 0, EPERM)]
    filt = (SockFilter * len(prog))(*[SockFilter(*p) for p in prog])
    fprog = SockFprog(len(prog), filt)
    PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        fail("no_new_privs: " + os.strerror(ctypes.get_errno()))
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        fail("seccomp: " + os.strerror(ctypes.get_errno()))


def set_limits(cpu_s):
    import resource as R
    lims = [(R.RLIMIT_CPU, cpu_s), (R.RLIMIT_AS, LIM["memory_bytes"]), (R.RLIMIT_FSIZE, LIM["file_bytes"]),
            (R.RLIMIT_NPROC, LIM["max_procs"]), (R.RLIMIT_NOFILE, 64), (R.RLIMIT_CORE, 0)]
    for res, v in lims:
        R.setrlimit(res, (v, v))


if MODE == "ns":
    try:
        build_root()
    except OSError as e:
        fail(str(e))
    drop_privileges()
elif MODE != "weak":
    fail("unknown mode " + MODE)
refuse_shared_memory()

signal.signal(signal.SIGINT, signal.SIG_IGN)
HAVE_PROC = MODE == "ns" and os.path.exists("/proc/self/statm")


def sandbox_rss():
    """Resident anonymous and shared memory (MAP_SHARED|MAP_ANONYMOUS) of
    every process of the namespace but the runner (PID 1): RLIMIT_AS bounds
    one process, this bounds them all. A shared page mapped by several
    processes counts for each."""
    total = 0
    for n in os.listdir("/proc"):
        if n.isdigit() and n != "1":
            try:
                with open("/proc/%s/status" % n, "rb") as f:
                    for line in f:
                        if line.startswith((b"RssAnon:", b"RssShmem:")):
                            total += int(line.split()[1]) * 1024
            except (OSError, ValueError, IndexError):
                pass
    return total


job = json.loads(sys.stdin.read())
os.close(0)
os.open("/dev/null", os.O_RDONLY)  # upstream's child has an empty stdin
program = job["program"]
func_name = job.get("func_name") or ""
deadline = time.monotonic() + LIM["timeout_s"]
cap = LIM["output_bytes"]
import ast, io, traceback

ARGS_CAP = 64 << 20  # bytes of JSON all functional arguments may take


def kill_leftovers():
    if MODE == "ns":
        try:
            os.kill(-1, signal.SIGKILL)  # everything else in the namespace
        except OSError:
            pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            pass


def prepare_args():
    """Upstream prepares every test before its child starts: a functional
    test's input string is eval'd line by line (any failing line: the whole
    text is the one argument), a list gives one argument per element, and
    json.dumps of the lot fails the step on an unserialisable value before
    any test runs. The eval runs here in a forked child with the tests'
    limits; it returns each functional test's arguments as JSON text, or
    None after reporting why they cannot be prepared."""
    idx = [i for i, t in enumerate(job["tests"]) if t["functional"]]
    if not idx:
        return {}
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            os.close(REPORT)
            os.close(r)
            null = os.open("/dev/null", os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            set_limits(int(max(deadline - time.monotonic(), 0)) + 1)
            texts = []
            res = None
            for i in idx:
                t = job["tests"][i]
                inp = t.get("input")
                if "args" in t:  # the argument list as JSON text (Python's dialect)
                    args = json.loads(t["args"])
                elif isinstance(inp, str):
                    lines = [l for l in inp.strip().splitlines() if l.strip()]
                    try:
                        args = [eval(l, {}) for l in lines]
                    except Exception:
                        args = [inp]
                elif isinstance(inp, list):
                    args = list(inp)
                else:
                    args = [inp]
                try:
                    texts.append(json.dumps(args))
                except Exception as e:
                    res = {"error": repr(e), "test": i}
                    break
            if res is None:
                res = {"args": dict(zip(map(str, idx), texts))}
            data = json.dumps(res).encode()
        except BaseException as e:
            try:
                data = json.dumps({"error": "preparing the arguments raised " + repr(e), "test": idx[0]}).encode()
            except BaseException:
                os._exit(1)
        while data:
            data = data[os.write(w, data[:65536]):]
        os._exit(0)
    os.close(w)
    buf, why = bytearray(), None
    while True:
        rem = deadline - time.monotonic()
        if rem <= 0:
            why = "timeout"
            break
        ready, _, _ = select.select([r], [], [], min(rem, 0.05))
        if not ready:
            continue
        chunk = os.read(r, 1 << 20)
        if not chunk:
            break
        buf += chunk
        if len(buf) > ARGS_CAP:
            why = "too_large"
            break
    os.close(r)
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
    _, st = os.waitpid(pid, 0)
    kill_leftovers()
    if why == "timeout":
        report({"test": 0, "status": "timeout"})
        return None
    if why == "too_large":
        report({"args_error": "the arguments take more than %d bytes as JSON" % ARGS_CAP, "test": idx[0]})
        return None
    try:
        res = json.loads(bytes(buf))
    except ValueError:
        how = "signal %d" % os.WTERMSIG(st) if os.WIFSIGNALED(st) else "exit status %d" % os.WEXITSTATUS(st)
        report({"args_error": "preparing the arguments died (%s)" % how, "test": idx[0]})
        return None
    if "error" in res:
        report({"args_error": res["error"], "test": res["test"]})
        return None
    return {int(k): v for k, v in res["args"].items()}


ARGS = prepare_args()
if ARGS is None:
    report({"finished": True})
    sys.exit(0)

for i, test in enumerate(job["tests"]):
    left = deadline - time.monotonic()
    if left <= 0:
        report({"test": i, "status": "timeout"})
        break
    inp = test.get("input")
    functional = test["functional"]
    fds = [os.pipe() for _ in range(3)]  # stdout, stderr, result
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            os.close(REPORT)
            for r, w in fds:
                os.close(r)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            os.dup2(fds[0][1], 1)
            os.dup2(fds[1][1], 2)
            resfd = fds[2][1]
            sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
            if not functional:
                # upstream: io.StringIO(str(input)): no .buffer, and "\r"
                # is kept (no universal newlines)
                sys.stdin = io.StringIO(inp if isinstance(inp, str) else str(inp))
            sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=True)
            sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), write_through=True)
            set_limits(int(left) + 1)
            import builtins
            builtins.exit = builtins.quit = sys.exit  # site's exit()/quit() (the runner runs with -S)

            def mark(kind, text):
                # The outcome channel, after what the program wrote to
                # stderr: "<text>\x01<kind>", kinds "ok" (finished), "exc"
                # (repr, caught as upstream catches Exception), "crash"
                # (uncaught upstream: traceback), "notfound", "exit". The
                # runner takes the last mark.
                os.write(fds[1][1], ("\n\x00EXC\x00" + text[:4000] + "\x01" + kind).encode())

            def write_result(b):
                while b:
                    b = b[os.write(resfd, b[:65536]):]

            if functional:
                args = json.loads(ARGS[i])
                g = {"__builtins__": __builtins__}  # no __name__: __main__ guards do not run
                real = sys.stdout, sys.stderr
                try:
                    # upstream: exec under redirect_stdout/stderr into
                    # StringIOs that are closed afterwards
                    with io.StringIO() as bo, io.StringIO() as be:
                        sys.stdout, sys.stderr = bo, be
                        try:
                            exec(compile(program, "<string>", "exec"), g)
                        finally:
                            sys.stdout, sys.stderr = real
                    if "Solution" in g:
                        fn = getattr(g["Solution"](), func_name)
                    elif func_name in g:
                        fn = g[func_name]
                    else:
                        mark("notfound", "Function not found")
                        os._exit(3)
                except SystemExit:
                    raise
                except BaseException:
                    mark("crash", traceback.format_exc())
                    os._exit(3)
                try:
                    result = fn(*args)
                except Exception as e:
                    mark("exc", repr(e))
                    os._exit(3)
                try:
                    text = str(result)
                except SystemExit:
                    raise
                except BaseException:  # upstream: raised in its main loop
                    mark("crash", traceback.format_exc())
                    os._exit(3)
                write_result(text.encode())
            else:
                g = {"__name__": "__main__", "__builtins__": __builtins__}
                exec(compile(program, "<string>", "exec"), g)
            sys.stdout.flush()
            mark("ok", "")
            os._exit(0)
        except SystemExit as e:
            # Python's exit status: None 0, an int its low byte (255 past
            # 64 bits), anything else 1 after printing str(code) to stderr.
            st, msg = 0, ""
            try:
                c = e.code
                if c is None:
                    pass
                elif isinstance(c, int):
                    st = c & 0xFF if -(1 << 63) <= c < (1 << 63) else 0xFF
                else:
                    st, msg = 1, str(c) + "\n"
            except BaseException:
                st = 1
            try:
                sys.stdout.flush()
            except BaseException:
                pass
            try:
                mark("exit", json.dumps({"status": st, "stderr": msg}))
            except BaseException:
                pass
            os._exit(0 if st == 0 else 1)
        except Exception as e:
            try:
                mark("exc", repr(e))
            except BaseException:
                try:
                    mark("crash", traceback.format_exc())
                except BaseException:
                    pass
            os._exit(3)
        except BaseException:
            try:
                mark("crash", traceback.format_exc())
            except BaseException:
                pass
            os._exit(3)
    for r, w in fds:
        os.close(w)
    bufs = [bytearray(), bytearray(), bytearray()]
    open_fds = {fds[k][0]: k for k in range(3)}
    for fd in open_fds:
        os.set_blocking(fd, False)
    status, over, exited, code = None, False, False, None
    next_mem = 0.0
    while True:
        if not exited:
            wpid, st = os.waitpid(pid, os.WNOHANG)
            if wpid == pid:
                exited, code = True, st
        rem = deadline - time.monotonic()
        if rem <= 0 and not exited:
            status = "timeout"
            break
        if not open_fds:
            if exited:
                break
            time.sleep(0.005)
            continue
        ready, _, _ = select.select(list(open_fds), [], [], min(max(rem, 0), 0.02))
        for fd in ready:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                del open_fds[fd]
                continue
            bufs[open_fds[fd]] += chunk
            if len(bufs[0]) + len(bufs[1]) + len(bufs[2]) > cap:
                over = True
        if over:
            status = "output_limit"
            break
        if HAVE_PROC and time.monotonic() >= next_mem:
            next_mem = time.monotonic() + 0.01
            if sandbox_rss() > LIM["memory_bytes"]:
                status = "memory_limit"
                break
        if exited and not ready:
            break  # leftovers holding the pipes open do not delay us
    if status is not None or not exited:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        if not exited:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            os.waitpid(pid, 0)
    kill_leftovers()
    for fd in open_fds:
        os.close(fd)
    err = bytes(bufs[1][:cap])
    exc = None
    if b"\x00EXC\x00" in err:
        err, _, e = err.rpartition(b"\n\x00EXC\x00")
        exc = e.decode("utf-8", "replace")
    out = {"test": i, "status": status or "done", "stdout": bytes(bufs[0][:cap]).decode("utf-8", "replace"),
           "stderr": err[-4000:].decode("utf-8", "replace"), "result": bytes(bufs[2][:cap]).decode("utf-8", "replace")}
    if exc == "\x01ok":
        out["completed"] = True
    elif exc is not None:
        out["exception"] = exc
    if status is None and code is not None:
        if os.WIFSIGNALED(code):
            out["signal"] = os.WTERMSIG(code)
        else:
            out["exit_code"] = os.WEXITSTATUS(code)
    report(out)
    if status == "timeout":
        break
report({"finished": True})
