// The eBPF tracer's kernel side (see bpf.rs): which tasks belong to which
// item, and what their file system calls name inside a registered
// workspace. The gate compiles it with clang when a run starts, after a
// part it writes itself (the watched calls, `setup` and `watched`), and
// loads it with its settings in the read-only globals below.
//
// No header is included: the few kernel structures read are declared with
// the fields used, and the loader relocates them against the kernel's BTF.

typedef unsigned long long u64;
typedef long long s64;
typedef unsigned int u32;
typedef int s32;

#define SEC(name) __attribute__((section(name), used))
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name
#define INLINE static inline __attribute__((always_inline))

// Helpers, by their number in the kernel's list.
static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static long (*bpf_map_update_elem)(void *map, const void *key, const void *value,
                                   u64 flags) = (void *)2;
static long (*bpf_map_delete_elem)(void *map, const void *key) = (void *)3;
static u64 (*bpf_get_current_pid_tgid)(void) = (void *)14;
static u64 (*bpf_get_current_task)(void) = (void *)35;
static long (*bpf_probe_read_kernel)(void *dst, u32 size, const void *src) = (void *)113;
static long (*bpf_probe_read_user_str)(void *dst, u32 size, const void *src) = (void *)114;
static long (*bpf_probe_read_kernel_str)(void *dst, u32 size, const void *src) = (void *)115;
static long (*bpf_ringbuf_output)(void *ringbuf, void *data, u64 size, u64 flags) = (void *)130;

// The kernel's structures, only the fields read.
struct qstr {
    const unsigned char *name;
} __attribute__((preserve_access_index));
struct dentry {
    struct dentry *d_parent;
    struct qstr d_name;
} __attribute__((preserve_access_index));
struct path {
    struct dentry *dentry;
} __attribute__((preserve_access_index));
struct file {
    struct path f_path;
} __attribute__((preserve_access_index));
struct fdtable {
    unsigned int max_fds;
    struct file **fd;
} __attribute__((preserve_access_index));
struct files_struct {
    struct fdtable *fdt;
} __attribute__((preserve_access_index));
struct fs_struct {
    struct path pwd;
} __attribute__((preserve_access_index));
struct thread_info {
    u32 status;
} __attribute__((preserve_access_index));
struct task_struct {
    struct thread_info thread_info;
    int pid;
    int tgid;
    struct fs_struct *fs;
    struct files_struct *files;
} __attribute__((preserve_access_index));
struct linux_binprm {
    const char *filename;
} __attribute__((preserve_access_index));
struct pt_regs {
    unsigned long bx;
    unsigned long cx;
    unsigned long bp;
    unsigned long di;
    unsigned long si;
    unsigned long dx;
    unsigned long r10;
    unsigned long r8;
    unsigned long r9;
    unsigned long orig_ax;
} __attribute__((preserve_access_index));

#define READ(dst, src) \
    bpf_probe_read_kernel(&(dst), sizeof(dst), __builtin_preserve_access_index(&(src)))

#define NAME 1024
#define LAUNCHERS 4
#define DEPTH 64
#define AT_FDCWD -100
// Why a call could not be placed (an `X` record's `nr`).
#define TOO_DEEP 1
#define UNREADABLE 2
#define X32_CALL 3
// The task is in an IA-32 call (`int 0x80`, `sysenter`), whose number is
// the i386 table's: the kernel's `TS_COMPAT`, set on the way in and
// cleared on the way back to user mode, after `sys_exit`.
#define TS_COMPAT 0x0002
// Added to an i386 call's number in the generated table's keys.
#define COMPAT 0x100000
// The x32 ABI's marker bit on x86-64 call numbers.
#define X32_BIT 0x40000000
#define NO_WAKEUP 1
#define FORCE_WAKEUP 2

// What the gate sets before loading.
volatile const u32 GATE = 0;
volatile const s64 MARK_FLAGS = 0;
volatile const u32 WORKSPACE_LEN = 0;
volatile const char WORKSPACE[NAME] = {0};
volatile const u32 LAUNCHER_LEN[LAUNCHERS] = {0};
volatile const char LAUNCHER[LAUNCHERS][NAME] = {{0}};

char LICENSE[] SEC("license") = "GPL";

// A watched call between its entry and its return.
struct call {
    s64 nr;
    s64 n1, d1, n2, d2, fl, tg;
    s64 fdonly;
};

// One record: a header, the name, and for a link the target after it.
struct rec {
    u32 kind;
    u32 root;
    u32 tid;
    s32 nr;
    s64 ret;
    s64 dfd;
    s64 flags;
    u64 hit;
    s64 k;
    u32 len;
    u32 tlen;
    char name[NAME];
    char target[NAME];
};
#define HEAD 64

struct {
    __uint(type, 27); // ring buffer
    __uint(max_entries, 1 << 25);
} events SEC(".maps");

// Records that found the ring full, at key 0.
struct {
    __uint(type, 2); // array
    __uint(max_entries, 1);
    __type(key, u32);
    __type(value, u64);
} lost SEC(".maps");

// Room for a record: 0 for the entry program, 1 for the others.
struct {
    __uint(type, 6); // per-CPU array
    __uint(max_entries, 2);
    __type(key, u32);
    __type(value, struct rec);
} scratch SEC(".maps");

// Task to its root; a root to how many of its tasks live; armed tasks.
struct {
    __uint(type, 1);
    __uint(max_entries, 16384);
    __type(key, u32);
    __type(value, u32);
} roots SEC(".maps");
struct {
    __uint(type, 1);
    __uint(max_entries, 16384);
    __type(key, u32);
    __type(value, u32);
} live SEC(".maps");
struct {
    __uint(type, 1);
    __uint(max_entries, 16384);
    __type(key, u32);
    __type(value, u32);
} armed SEC(".maps");
// Calls in flight, by thread.
struct {
    __uint(type, 1);
    __uint(max_entries, 16384);
    __type(key, u32);
    __type(value, struct call);
} calls SEC(".maps");
// The dentries of registered workspaces (a run's and its base
// checkouts'); one that does not fit counts as lost.
struct {
    __uint(type, 1);
    __uint(max_entries, 1024);
    __type(key, u64);
    __type(value, u32);
} ws SEC(".maps");

INLINE void count_lost(void) {
    u32 zero = 0;
    u64 *n = bpf_map_lookup_elem(&lost, &zero);
    if (n)
        __sync_fetch_and_add(n, 1);
}

// Sends the first `size` bytes of `r`; a full ring is counted.
INLINE void send(struct rec *r, u64 size, u64 flags) {
    if (size > sizeof(*r))
        size = sizeof(*r);
    if (bpf_ringbuf_output(&events, r, size, flags) != 0)
        count_lost();
}

INLINE u64 name_size(struct rec *r) {
    u32 len = r->len;
    if (len > NAME)
        len = NAME;
    return HEAD + len;
}

// A link's record: the name's room in full, then the target.
INLINE u64 target_size(struct rec *r) {
    u32 tlen = r->tlen;
    if (tlen > NAME)
        tlen = NAME;
    return HEAD + NAME + tlen;
}

INLINE void reset(struct rec *r, u32 kind, u32 root, u32 tid) {
    r->kind = kind;
    r->root = root;
    r->tid = tid;
    r->nr = 0;
    r->ret = 0;
    r->dfd = 0;
    r->flags = 0;
    r->hit = 0;
    r->k = 0;
    r->len = 0;
    r->tlen = 0;
}

// The dentry open at descriptor `fd` of the current task, or 0.
INLINE struct dentry *fd_dentry(s64 fd) {
    struct task_struct *t = (struct task_struct *)bpf_get_current_task();
    struct files_struct *files = 0;
    struct fdtable *fdt = 0;
    struct file **arr = 0;
    struct file *f = 0;
    struct dentry *d = 0;
    unsigned int max = 0;
    if (fd < 0)
        return 0;
    READ(files, t->files);
    if (!files)
        return 0;
    READ(fdt, files->fdt);
    if (!fdt)
        return 0;
    READ(max, fdt->max_fds);
    if ((u64)fd >= max)
        return 0;
    READ(arr, fdt->fd);
    if (!arr)
        return 0;
    bpf_probe_read_kernel(&f, sizeof(f), &arr[fd]);
    if (!f)
        return 0;
    READ(d, f->f_path.dentry);
    return d;
}

INLINE struct dentry *cwd_dentry(void) {
    struct task_struct *t = (struct task_struct *)bpf_get_current_task();
    struct fs_struct *fs = 0;
    struct dentry *d = 0;
    READ(fs, t->fs);
    if (!fs)
        return 0;
    READ(d, fs->pwd.dentry);
    return d;
}

// Walks up from dentry `d` to a registered workspace: its dentry, with the
// steps in `r->k`; 0 when the walk reached the top of its mount first; 1
// with `r->k` -1 when it was deeper than the walk goes. A function of its
// own, which the verifier checks once.
__attribute__((noinline)) u64 walk(u64 d, struct rec *r) {
    if (!r)
        return 0;
    r->k = 0;
    for (int i = 0; i < DEPTH; i++) {
        struct dentry *dd = (struct dentry *)d;
        struct dentry *up = 0;
        if (!d)
            return 0;
        if (bpf_map_lookup_elem(&ws, &d)) {
            r->k = i;
            return d;
        }
        READ(up, dd->d_parent);
        if ((u64)up == d)
            return 0;
        d = (u64)up;
    }
    r->k = -1;
    return 1;
}

// Sends the names of the `k` folders from dentry `d` up, innermost
// first, for the root and thread in `r`'s header.
__attribute__((noinline)) int components(u64 d, s64 k, struct rec *r) {
    u32 root, tid;
    if (!r)
        return 0;
    root = r->root;
    tid = r->tid;
    for (int i = 0; i < DEPTH; i++) {
        struct dentry *dd = (struct dentry *)d;
        const unsigned char *name = 0;
        long len;
        if (i >= k || !d)
            return 0;
        reset(r, 'C', root, tid);
        READ(name, dd->d_name.name);
        len = bpf_probe_read_kernel_str(r->name, 256, name);
        r->len = len > 0 ? len : 0;
        send(r, name_size(r), NO_WAKEUP);
        READ(dd, dd->d_parent);
        d = (u64)dd;
    }
    return 0;
}

// Whether the name in `r` starts with the workspace's path (a folder
// boundary after it).
__attribute__((noinline)) int in_workspace(struct rec *r) {
    u32 n = WORKSPACE_LEN;
    if (!r)
        return 0;
    if (n == 0 || n >= NAME - 1)
        return 0;
    for (u32 i = 0; i < NAME - 1; i++) {
        if (i >= n)
            break;
        if (r->name[i] != WORKSPACE[i])
            return 0;
    }
    return r->name[n & (NAME - 1)] == '/' || r->name[n & (NAME - 1)] == 0;
}

// Whether the name in `r` is spelled otherwise than the kernel resolves
// it: a `//`, or a `.` or `..` segment. Such a name is sent as it is, for
// the reader to resolve (`//WORKSPACE/bin/helper` is the workspace's).
__attribute__((noinline)) int odd(struct rec *r) {
    u32 len = 0;
    if (!r)
        return 0;
    len = r->len;
    for (u32 i = 0; i < NAME - 3; i++) {
        char a, b, c;
        if (i + 1 >= len)
            break;
        if (r->name[i] != '/')
            continue;
        a = r->name[(i + 1) & (NAME - 1)];
        b = r->name[(i + 2) & (NAME - 1)];
        c = r->name[(i + 3) & (NAME - 1)];
        if (a == '/')
            return 1;
        if (a == '.' && (b == '/' || b == 0))
            return 1;
        if (a == '.' && b == '.' && (c == '/' || c == 0))
            return 1;
    }
    return 0;
}

// Whether the name in `r` is under `/proc/` or `/dev/fd/`.
INLINE int proc_or_fd(struct rec *r) {
    char *n = r->name;
    if (n[0] != '/')
        return 0;
    if (n[1] == 'p' && n[2] == 'r' && n[3] == 'o' && n[4] == 'c' && n[5] == '/')
        return 1;
    return n[1] == 'd' && n[2] == 'e' && n[3] == 'v' && n[4] == '/' && n[5] == 'f' &&
           n[6] == 'd' && n[7] == '/';
}

// Whether the current task is in an IA-32 call.
INLINE int compat(void) {
    struct task_struct *t = (struct task_struct *)bpf_get_current_task();
    u32 status = 0;
    READ(status, t->thread_info.status);
    return (status & TS_COMPAT) != 0;
}

// The generated part, by key (the call's number, plus `COMPAT` for an
// i386 call): `watched(key)`, `setup(key, call, args)`, `exec_kind(key)`
// (1 for `execve`, 2 for `execveat`), `opens(key)` and `refused(key)`.
@CALLS@

// Places slot `slot`'s name and sends its record (and the names of the
// folders it leads down from) when it lies in a workspace. Returns what
// the link rule needs: 1 when the name was placed in a workspace, 0 when
// it was not, -1 when the call names nothing in this slot.
INLINE int resolve(struct rec *r, struct call *c, int slot, s64 ret, u32 root, u32 tid) {
    s64 name = slot == 1 ? c->n1 : c->n2;
    s64 dfd = slot == 1 ? c->d1 : c->d2;
    s64 fdonly = slot == 1 ? c->fdonly : 0;
    struct dentry *base = 0;
    u64 hit = 0;
    s64 k = 0;
    long len = 0;
    if (!name && !fdonly)
        return -1;
    reset(r, 'E', root, tid);
    r->nr = c->nr;
    r->ret = ret;
    r->dfd = (s32)dfd;
    r->flags = c->fl;
    if (name) {
        len = bpf_probe_read_user_str(r->name, NAME, (const void *)name);
        if (len <= 0) {
            // A name the tracer could not read: nothing to place.
            reset(r, 'X', root, tid);
            r->nr = UNREADABLE;
            send(r, HEAD, NO_WAKEUP);
            return 0;
        }
        r->len = len;
    }
    if (c->tg) {
        len = bpf_probe_read_user_str(r->target, NAME, (const void *)c->tg);
        if (len <= 0 && ret == 0) {
            // A link made whose target could not be read.
            reset(r, 'X', root, tid);
            r->nr = UNREADABLE;
            send(r, HEAD, NO_WAKEUP);
            return 0;
        }
        r->tlen = len > 0 ? len : 0;
    }
    if (name && r->len > 0 && r->name[0] == '/') {
        if (in_workspace(r) || odd(r))
            hit = 1;
        else if (proc_or_fd(r))
            hit = 2;
        else {
            // A link made outside the workspace: its target still counts.
            if (c->tg && ret == 0 && r->tlen > 0) {
                r->kind = 'L';
                send(r, target_size(r), NO_WAKEUP);
            }
            return 0;
        }
    } else {
        base = (s32)dfd == AT_FDCWD ? cwd_dentry() : fd_dentry(dfd);
        hit = walk((u64)base, r);
        k = r->k;
        if (hit == 1) {
            // Deeper than the walk goes: the reader cannot place it.
            reset(r, 'X', root, tid);
            r->nr = TOO_DEEP;
            send(r, HEAD, NO_WAKEUP);
            return 0;
        }
        if (hit == 0) {
            hit = 2;
            k = 0;
        }
    }
    if (hit == 2) {
        if (!name)
            return 0;
        r->hit = 0;
        r->k = 0;
    } else {
        r->hit = hit;
        r->k = k;
    }
    if (c->tg && r->tlen > 0) {
        send(r, target_size(r), NO_WAKEUP);
    } else {
        send(r, name_size(r), NO_WAKEUP);
    }
    if (hit != 2 && k > 0)
        components((u64)base, k, r);
    return hit == 2 ? 0 : 1;
}

SEC("raw_tracepoint/sys_enter")
int on_enter(u64 *ctx) {
    long id = ctx[1];
    long key = id;
    int exec = 0;
    u64 pid_tgid;
    u32 tid, tgid, root;
    u32 *rp;
    struct pt_regs *regs;
    struct call c = {0};
    u64 a[6] = {0};
    if (id >= X32_BIT && id < X32_BIT + 1024) {
        // An x32 call (the sandbox refuses them; outside one the kernel
        // may run them): not read, so the root's trace is incomplete.
        u32 zero = 0;
        struct rec *r;
        tid = (u32)bpf_get_current_pid_tgid();
        if (!bpf_map_lookup_elem(&armed, &tid))
            return 0;
        r = bpf_map_lookup_elem(&scratch, &zero);
        rp = bpf_map_lookup_elem(&roots, &tid);
        if (r) {
            reset(r, 'X', rp ? *rp : 0, tid);
            r->nr = X32_CALL;
            send(r, HEAD, NO_WAKEUP);
        }
        return 0;
    }
    if (!watched(id) && !watched(id | COMPAT))
        return 0;
    if (compat())
        key = id | COMPAT;
    if (!watched(key))
        return 0;
    pid_tgid = bpf_get_current_pid_tgid();
    tid = (u32)pid_tgid;
    tgid = pid_tgid >> 32;
    regs = (struct pt_regs *)ctx[0];
    if (tgid == GATE) {
        // Only the gate's marked opens matter: registrations and barriers.
        if (key != 257)
            return 0;
        READ(a[1], regs->si);
        READ(a[2], regs->dx);
        if ((s64)a[2] != MARK_FLAGS)
            return 0;
        c.nr = key;
        c.n1 = a[1];
        c.fl = a[2];
        if (bpf_map_update_elem(&calls, &tid, &c, 0) != 0)
            count_lost();
        return 0;
    }
    if (!bpf_map_lookup_elem(&armed, &tid))
        return 0;
    if (key & COMPAT) {
        // The IA-32 convention's registers, as the kernel reads them: the
        // low 32 bits only.
        READ(a[0], regs->bx);
        READ(a[1], regs->cx);
        READ(a[2], regs->dx);
        READ(a[3], regs->si);
        READ(a[4], regs->di);
        READ(a[5], regs->bp);
        for (int i = 0; i < 6; i++)
            a[i] = (u32)a[i];
    } else {
        READ(a[0], regs->di);
        READ(a[1], regs->si);
        READ(a[2], regs->dx);
        READ(a[3], regs->r10);
        READ(a[4], regs->r8);
        READ(a[5], regs->r9);
    }
    c.nr = key;
    // An exec's name is gone once it succeeds: it is read on the way in.
    // (Set here, not by `setup`, so that the verifier walks `resolve` from
    // one state, not from one per watched call.)
    exec = exec_kind(key);
    if (exec) {
        u32 zero = 0;
        struct rec *r = bpf_map_lookup_elem(&scratch, &zero);
        if (exec == 1) {
            c.n1 = a[0];
            c.d1 = AT_FDCWD;
        } else {
            c.n1 = a[1];
            c.d1 = (s32)a[0];
        }
        rp = bpf_map_lookup_elem(&roots, &tid);
        root = rp ? *rp : 0;
        if (r)
            resolve(r, &c, 1, 0, root, tid);
        return 0;
    }
    setup(key, &c, a);
    if (bpf_map_update_elem(&calls, &tid, &c, 0) != 0)
        count_lost();
    return 0;
}

SEC("raw_tracepoint/sys_exit")
int on_exit(u64 *ctx) {
    struct pt_regs *regs = (struct pt_regs *)ctx[0];
    s64 ret = ctx[1];
    long id = 0;
    u64 pid_tgid;
    u32 tid, root, one = 1;
    u32 *rp;
    struct call *c;
    struct rec *r;
    READ(id, regs->orig_ax);
    // The call's key was kept at its entry.
    if (!watched(id) && !watched(id | COMPAT))
        return 0;
    pid_tgid = bpf_get_current_pid_tgid();
    tid = (u32)pid_tgid;
    c = bpf_map_lookup_elem(&calls, &tid);
    if (!c)
        return 0;
    r = bpf_map_lookup_elem(&scratch, &one);
    if (!r)
        goto forget;
    if ((u32)(pid_tgid >> 32) == GATE) {
        long len;
        reset(r, 'Z', 0, tid);
        len = bpf_probe_read_user_str(r->name, NAME, (const void *)c->n1);
        r->len = len > 0 ? len : 0;
        if (ret >= 0) {
            u64 d = (u64)fd_dentry(ret);
            u32 yes = 1;
            if (bpf_map_update_elem(&ws, &d, &yes, 0) != 0)
                count_lost();
            r->kind = 'W';
            r->hit = d;
        }
        send(r, name_size(r), FORCE_WAKEUP);
        goto forget;
    }
    rp = bpf_map_lookup_elem(&roots, &tid);
    root = rp ? *rp : 0;
    if (refused(c->nr)) {
        // A call the sandbox refuses: the reader is told whether it ran.
        reset(r, 'E', root, tid);
        r->nr = c->nr;
        r->ret = ret;
        r->dfd = AT_FDCWD;
        r->hit = 1;
        send(r, HEAD, NO_WAKEUP);
        goto forget;
    }
    if (!exec_kind(c->nr)) {
        struct call copy = *c;
        resolve(r, &copy, 1, ret, root, tid);
        copy.tg = 0;
        resolve(r, &copy, 2, ret, root, tid);
        // An open is also followed to the file it reached.
        if (opens(copy.nr) && ret >= 0) {
            struct dentry *d = fd_dentry(ret);
            s64 k;
            u64 hit;
            reset(r, 'R', root, tid);
            hit = walk((u64)d, r);
            k = r->k;
            if (hit == 1) {
                reset(r, 'X', root, tid);
                r->nr = TOO_DEEP;
                send(r, HEAD, NO_WAKEUP);
            } else if (hit > 1 && k > 0) {
                reset(r, 'R', root, tid);
                r->nr = copy.nr;
                r->ret = ret;
                r->flags = copy.fl;
                r->hit = hit;
                r->k = k;
                send(r, HEAD, NO_WAKEUP);
                components((u64)d, k, r);
            }
        }
    }
forget:
    bpf_map_delete_elem(&calls, &tid);
    return 0;
}

SEC("raw_tracepoint/sched_process_fork")
int on_fork(u64 *ctx) {
    struct task_struct *child = (struct task_struct *)ctx[1];
    u64 pid_tgid = bpf_get_current_pid_tgid();
    u32 tid = (u32)pid_tgid;
    u32 cpid = 0, one = 1;
    u32 *rp;
    READ(cpid, child->pid);
    if ((u32)(pid_tgid >> 32) == GATE) {
        if (bpf_map_update_elem(&roots, &cpid, &cpid, 0) != 0 ||
            bpf_map_update_elem(&live, &cpid, &one, 0) != 0)
            count_lost();
        return 0;
    }
    rp = bpf_map_lookup_elem(&roots, &tid);
    if (rp) {
        u32 root = *rp;
        u32 *n = bpf_map_lookup_elem(&live, &root);
        if (bpf_map_update_elem(&roots, &cpid, &root, 0) != 0)
            count_lost();
        if (n)
            __sync_fetch_and_add(n, 1);
        if (bpf_map_lookup_elem(&armed, &tid) && bpf_map_update_elem(&armed, &cpid, &one, 0) != 0)
            count_lost();
    }
    return 0;
}

// Whether the program executed is one of the sandbox's own (which does
// not arm a root).
INLINE int launcher(struct rec *r) {
    for (int l = 0; l < LAUNCHERS; l++) {
        u32 n = LAUNCHER_LEN[l];
        int same = 1;
        if (n == 0 || n >= NAME)
            continue;
        if (r->len != n + 1)
            continue;
        for (u32 i = 0; i < NAME; i++) {
            if (i >= n)
                break;
            if (r->name[i] != LAUNCHER[l][i]) {
                same = 0;
                break;
            }
        }
        if (same)
            return 1;
    }
    return 0;
}

SEC("raw_tracepoint/sched_process_exec")
int on_exec(u64 *ctx) {
    struct task_struct *p = (struct task_struct *)ctx[0];
    u32 old = (u32)ctx[1];
    struct linux_binprm *bprm = (struct linux_binprm *)ctx[2];
    const char *filename = 0;
    u32 pid = 0, one = 1;
    u32 *rp;
    struct rec *r;
    long len;
    rp = bpf_map_lookup_elem(&roots, &old);
    if (!rp)
        return 0;
    READ(pid, p->pid);
    if (old != pid) {
        u32 root = *rp;
        if (bpf_map_update_elem(&roots, &pid, &root, 0) != 0)
            count_lost();
        bpf_map_delete_elem(&roots, &old);
        if (bpf_map_lookup_elem(&armed, &old)) {
            if (bpf_map_update_elem(&armed, &pid, &one, 0) != 0)
                count_lost();
            bpf_map_delete_elem(&armed, &old);
        }
    }
    r = bpf_map_lookup_elem(&scratch, &one);
    if (!r)
        return 0;
    READ(filename, bprm->filename);
    len = bpf_probe_read_kernel_str(r->name, NAME, filename);
    r->len = len > 0 ? len : 0;
    if (launcher(r))
        return 0;
    rp = bpf_map_lookup_elem(&roots, &pid);
    if (rp && *rp == pid && !bpf_map_lookup_elem(&armed, &pid)) {
        // The gate's own child ran a program of its own, not an item's.
        bpf_map_delete_elem(&roots, &pid);
        bpf_map_delete_elem(&live, &pid);
    } else if (bpf_map_update_elem(&armed, &pid, &one, 0) != 0) {
        count_lost();
    }
    return 0;
}

SEC("raw_tracepoint/sched_process_exit")
int on_task_exit(u64 *ctx) {
    u32 tid = (u32)bpf_get_current_pid_tgid();
    u32 one = 1;
    u32 *rp = bpf_map_lookup_elem(&roots, &tid);
    u32 *n;
    u32 root;
    struct rec *r;
    if (!rp)
        return 0;
    root = *rp;
    bpf_map_delete_elem(&roots, &tid);
    bpf_map_delete_elem(&armed, &tid);
    bpf_map_delete_elem(&calls, &tid);
    n = bpf_map_lookup_elem(&live, &root);
    if (n && __sync_fetch_and_add(n, -1) == 1) {
        bpf_map_delete_elem(&live, &root);
        r = bpf_map_lookup_elem(&scratch, &one);
        if (r) {
            reset(r, 'N', root, tid);
            send(r, HEAD, FORCE_WAKEUP);
        }
    }
    return 0;
}
