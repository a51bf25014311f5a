package main

// One fork per command, and everything the shell agent did with setsid, nsenter and a subshell done in the
// forked child with raw system calls before the one execve: a new session, oom_score_adj 1000 and
// RLIMIT_DATA (agent commands only, so the OOM killer takes them first and the judge keeps neither),
// setgroups(0) + setresgid + setresuid to the agent uid (the kernel clears every capability; the
// process turns non-dumpable at the uid change, so the agent uid cannot read this copy of the judge's
// memory in the instant before execve replaces it), chdir as the agent, stdio from fds the judge opened,
// every other fd closed, then execve along PATH (execvp's rules: ENOENT/ENOTDIR try the next entry).
//
// Go's own syscall.ForkExec cannot do it: SysProcAttr has no hook for oom_score_adj or rlimits, and
// neither can be set from the parent once the child runs as another uid (no CAP_SYS_RESOURCE, no
// CAP_DAC_OVERRIDE). So this follows Go's forkAndExecInChild: runtime_BeforeFork blocks signals and
// poisons the stack guard, the child calls only RawSyscall (assembly, no stack growth, no allocation,
// no locks) and runtime_AfterForkInChild to restore the signal mask and default handlers. A plain fork
// (not vfork): the child has its own copy of the address space, so it may write its stack freely.

import (
	"syscall"
	"unsafe"
)

//go:linkname runtimeBeforeFork syscall.runtime_BeforeFork
func runtimeBeforeFork()

//go:linkname runtimeAfterFork syscall.runtime_AfterFork
func runtimeAfterFork()

//go:linkname runtimeAfterForkInChild syscall.runtime_AfterForkInChild
func runtimeAfterForkInChild()

const (
	sysCloseRange = 436
	rlimitData    = 2
)

// spawnSpec is everything the child needs, prepared (allocated) by the parent before the fork.
type spawnSpec struct {
	drop    bool // become the agent uid (and take oom_score_adj 1000 and RLIMIT_DATA)
	uid     uintptr
	dataLim *syscall.Rlimit // nil: no RLIMIT_DATA
	dir     *byte           // nil: stay in the judge's cwd ("/")
	fds     [3]int          // stdin, stdout, stderr of the command
	killAll bool            // instead of exec: kill(-1, SIGKILL) as the agent (atomic against fork loops)
	paths   []*byte         // execve candidates, in order
	shArgv  [][]*byte       // per candidate: /bin/sh <candidate> argv[1:]... (execvp's ENOEXEC fallback)
	argv    []*byte         // NULL-terminated
	envv    []*byte         // NULL-terminated
	dirMsg  []byte          // written to stderr when chdir fails (exit 126)
	dropMsg []byte          // when the uid drop fails (exit 126; the program never runs)
	nfMsg   []byte          // no candidate exists (exit 127)
	accMsg  []byte          // a candidate exists but cannot be executed (exit 126)
}

var (
	oomPath = []byte("/proc/self/oom_score_adj\x00")
	oomVal  = []byte("1000")
)

// forkExec starts the child; it returns the child's pid (its session and process group id) in the parent.
//
//go:noinline
//go:norace
//go:nocheckptr
func forkExec(s *spawnSpec) (pid int, err syscall.Errno) {
	var r1 uintptr
	var e syscall.Errno
	var fd uintptr
	var i int
	eacces := false

	runtimeBeforeFork()
	r1, _, e = syscall.RawSyscall6(syscall.SYS_CLONE, uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
	if e != 0 || r1 != 0 {
		runtimeAfterFork()
		return int(r1), e
	}

	// In the child: raw system calls only from here on.
	runtimeAfterForkInChild()
	syscall.RawSyscall(syscall.SYS_SETSID, 0, 0, 0)
	for i = 0; i < 3; i++ {
		if s.fds[i] != i {
			if _, _, e = syscall.RawSyscall(syscall.SYS_DUP3, uintptr(s.fds[i]), uintptr(i), 0); e != 0 {
				syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 126, 0, 0)
			}
		}
	}
	// Only fds 0-2 survive into the command (the judge's are close-on-exec anyway; this is the guarantee).
	syscall.RawSyscall(sysCloseRange, 3, ^uintptr(0)>>1, 0)
	if s.drop {
		fd, _, e = syscall.RawSyscall(syscall.SYS_OPEN, uintptr(unsafe.Pointer(&oomPath[0])), syscall.O_WRONLY|syscall.O_CLOEXEC, 0)
		if e == 0 {
			syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&oomVal[0])), uintptr(len(oomVal)))
			syscall.RawSyscall(syscall.SYS_CLOSE, fd, 0, 0)
		}
		if s.dataLim != nil {
			syscall.RawSyscall(syscall.SYS_SETRLIMIT, rlimitData, uintptr(unsafe.Pointer(s.dataLim)), 0)
		}
		_, _, e = syscall.RawSyscall(syscall.SYS_SETGROUPS, 0, 0, 0)
		if e == 0 {
			_, _, e = syscall.RawSyscall(syscall.SYS_SETRESGID, s.uid, s.uid, s.uid)
		}
		if e == 0 {
			_, _, e = syscall.RawSyscall(syscall.SYS_SETRESUID, s.uid, s.uid, s.uid)
		}
		if e != 0 {
			syscall.RawSyscall(syscall.SYS_WRITE, 2, uintptr(unsafe.Pointer(&s.dropMsg[0])), uintptr(len(s.dropMsg)))
			syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 126, 0, 0)
		}
	}
	if s.killAll {
		syscall.RawSyscall(syscall.SYS_KILL, ^uintptr(0), uintptr(syscall.SIGKILL), 0)
		syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 0, 0, 0)
	}
	if s.dir != nil {
		if _, _, e = syscall.RawSyscall(syscall.SYS_CHDIR, uintptr(unsafe.Pointer(s.dir)), 0, 0); e != 0 {
			syscall.RawSyscall(syscall.SYS_WRITE, 2, uintptr(unsafe.Pointer(&s.dirMsg[0])), uintptr(len(s.dirMsg)))
			syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 126, 0, 0)
		}
	}
	for i = 0; i < len(s.paths); i++ {
		_, _, e = syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(s.paths[i])), uintptr(unsafe.Pointer(&s.argv[0])), uintptr(unsafe.Pointer(&s.envv[0])))
		if e == syscall.ENOEXEC && i < len(s.shArgv) {
			// A file without a #! line: execvp runs it with the shell, and so do we.
			_, _, e = syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(s.shArgv[i][0])), uintptr(unsafe.Pointer(&s.shArgv[i][0])), uintptr(unsafe.Pointer(&s.envv[0])))
		}
		if e == syscall.EACCES || e == syscall.EPERM || e == syscall.ENOEXEC || e == syscall.EISDIR || e == syscall.EAGAIN || e == syscall.E2BIG || e == syscall.ENOMEM || e == syscall.ETXTBSY {
			eacces = true
		}
	}
	if eacces {
		syscall.RawSyscall(syscall.SYS_WRITE, 2, uintptr(unsafe.Pointer(&s.accMsg[0])), uintptr(len(s.accMsg)))
		syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 126, 0, 0)
	}
	syscall.RawSyscall(syscall.SYS_WRITE, 2, uintptr(unsafe.Pointer(&s.nfMsg[0])), uintptr(len(s.nfMsg)))
	syscall.RawSyscall(syscall.SYS_EXIT_GROUP, 127, 0, 0)
	return 0, 0
}
