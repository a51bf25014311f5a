// sandgym-agent: the in-sandbox JUDGE of the command channel as one static binary (protocol version 3).
// It replaces the POSIX sh agent (server/src/sandbox/channel/agent-script.ts) wherever the driver can
// place this file in the sandbox (Docker: a read-only bind mount; bubblewrap: --ro-bind), and keeps every
// property of it (docs/SANDBOX.md, "The command channel", "Two trust domains", "Threat model"):
//
//   - It runs as the judge (uid 0 with only CAP_SETUID, CAP_SETGID, CAP_KILL, no_new_privs), owns the state
//     directory (0700) and the output directory (0711), and is the only holder of the nonce (its memory;
//     no file, argv, environment or fd of the agent's). Every agent command drops to the agent uid in its
//     forked child (spawn_linux.go), with oom_score_adj 1000 and RLIMIT_DATA, in its own session.
//   - Frames to the host are "\n<nonce> <fields>\n", one writer at a time; raw output of a command goes
//     between its frames, at most cap+1 bytes per stream, read back from judge-owned files the command
//     held as fds only. Output cannot end a payload or forge a frame without the nonce.
//   - Background policies: flag k kills every agent-uid process when the command ends, x kills them all
//     before it starts (checks, wipes); found by scanning /proc/<pid>/status (real, effective, saved and
//     filesystem uid), after an atomic kill(-1) as the agent uid.
//   - The lease watchdog kills the whole sandbox when the host stops refreshing; stdin EOF does too.
//
// What it saves: the shell agent forks a subshell and execs setsid, nsenter and the program for every
// command, and forks and execs again to scan /proc; here one fork and one execve per command, the scan and
// the output read-back in-process, one write per result.
//
// Protocol (host -> agent), line 1: "<nonce> <lease_ticks> <agent_uid> <data_limit_kib|unlimited>", then
// "<nonce> <call>" lines; lines without the nonce are ignored. Binary fields are standard base64 ("-" =
// empty). Calls:
//
//	l <n>                                   lease refresh
//	k <id> TERM|KILL                        signal the command's process group
//	a <id> <len> c|i                        <len> raw bytes follow: script (c) or stdin (i) of command id
//	s <id> <cap1> <flags> <b64 script>      run a script with sh -c (no stdin)
//	r <id> <cap1> <flags>                   run the uploaded script (stdin from the upload, if any)
//	x <id> <cap1> <flags> <b64 cwd> <b64 env "K=V\0..."> <b64 argv "a\0b\0...">   exec argv directly
//
// Flags: x exclusive, k kill leftovers, d stream stdout into the channel, J judge identity, - none.
// Protocol (agent -> host): h 3 <pid>, o <id>, e <id>, x <id> <status> <oom>, y <id> <why> (agent-script.ts).
package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const protocolVersion = 3

var (
	nonce     string
	agentUID  int
	dataLim   *syscall.Rlimit
	stateDir  string
	ioDir     string
	oomFile   string
	out       = os.Stdout
	outMu     sync.Mutex
	lease     atomic.Int64
	devNull   *os.File
	judgeEnv  []string
	judgePath []string

	// The running command (one at a time; the host queues): its id and process group, for `k`.
	runMu  sync.Mutex
	runID  = -1
	runPID = 0

	// Uploads waiting for their `r`/`x`: scripts in memory, stdin in an unnamed file of the state dir.
	upMu      sync.Mutex
	upScript  = map[int][]byte{}
	upStdin   = map[int]*os.File{}
	upFailed  = map[int]bool{}
	selfPID   = os.Getpid()
	jobs      = make(chan job, 4)
	ioTmpfile = true
)

type job struct {
	kind  byte // 's', 'r', 'x'
	id    int
	cap1  int
	flags string
	text  []byte   // script
	cwd   string   // x
	env   []string // x
	argv  []string // x
}

func die(code int, msg string) {
	os.Stderr.WriteString("sandgym-agent: " + msg + "\n")
	os.Exit(code)
}

func emit(b []byte) {
	outMu.Lock()
	_, _ = out.Write(b)
	outMu.Unlock()
}

func frame(b []byte, fields ...string) []byte {
	b = append(b, '\n')
	b = append(b, nonce...)
	for _, f := range fields {
		b = append(b, ' ')
		b = append(b, f...)
	}
	return append(b, '\n')
}

func main() {
	runtime.GOMAXPROCS(2)
	if len(os.Args) < 4 {
		die(2, "usage: sandgym-agent STATE_DIR IO_DIR MODE")
	}
	stateDir, ioDir = os.Args[1], os.Args[2]
	mode := os.Args[3]
	syscall.Umask(0o077)
	in := bufio.NewReaderSize(os.Stdin, 64*1024)
	line, err := in.ReadString('\n')
	if err != nil {
		os.Exit(0)
	}
	hs := strings.Fields(line)
	if len(hs) < 4 || hs[0] == "" {
		os.Exit(0)
	}
	nonce = hs[0]
	ticks, err := strconv.Atoi(hs[1])
	if err != nil || ticks < 1 {
		ticks = 12
	}
	agentUID, err = strconv.Atoi(hs[2])
	if err != nil || agentUID <= 0 {
		die(113, "invalid agent uid '"+hs[2]+"'")
	}
	if kib, err := strconv.ParseUint(hs[3], 10, 63); err == nil {
		dataLim = &syscall.Rlimit{Cur: kib * 1024, Max: kib * 1024}
	}
	for _, d := range []string{stateDir, ioDir} {
		var st syscall.Stat_t
		if syscall.Stat(d, &st) != nil || int(st.Uid) != os.Geteuid() {
			die(111, stateDir+" and "+ioDir+" must belong to the judge identity")
		}
	}
	if devNull, err = os.Open("/dev/null"); err != nil {
		die(111, "cannot open /dev/null")
	}
	judgeEnv = os.Environ()
	judgePath = pathOf(judgeEnv)
	// The drop must work and must leave the judge's directories out of the agent's reach.
	if st := probe(); st != 0 {
		die(114, "cannot run commands as agent uid "+hs[2]+" apart from the judge (needs CAP_SETUID/CAP_SETGID, a private "+stateDir+" and "+ioDir+")")
	}
	if err := os.Mkdir(stateDir+"/judge", 0o700); err != nil {
		die(111, "cannot create the judge's working directory in "+stateDir)
	}
	for _, f := range []string{"/sys/fs/cgroup/memory/memory.oom_control", "/sys/fs/cgroup/memory.events"} {
		if fh, err := os.Open(f); err == nil {
			fh.Close()
			oomFile = f
			break
		}
	}
	go watchdog(int64(ticks))
	go runner()
	emit(frame(nil, "h", strconv.Itoa(protocolVersion), strconv.Itoa(selfPID)))
	readLoop(in)
	if mode == "attach" {
		killAll()
	}
	os.Exit(0)
}

func pathOf(env []string) []string {
	p := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			p = kv[5:]
		}
	}
	return strings.Split(p, ":")
}

// probe runs `sh -c '[ ! -r d ] && [ ! -w d ] && [ ! -w x ]'` as the agent, as the shell agent does.
func probe() int {
	st, err := spawnWait(&job{kind: 'x', argv: []string{"sh", "-c", `[ ! -r "$1" ] && [ ! -w "$1" ] && [ ! -w "$2" ]`, "sandgym-probe", stateDir, ioDir}}, true, devNull, devNull, devNull)
	if err != nil {
		return 1
	}
	return st
}

func readLoop(in *bufio.Reader) {
	prefix := nonce + " "
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			return
		}
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		f := strings.Fields(line[len(prefix):])
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "l":
			if len(f) > 1 {
				if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					lease.Store(n)
				}
			}
		case "k":
			if len(f) > 2 {
				id, _ := strconv.Atoi(f[1])
				sig := syscall.SIGKILL
				if f[2] == "TERM" {
					sig = syscall.SIGTERM
				}
				runMu.Lock()
				if runID == id && runPID > 0 {
					_ = syscall.Kill(-runPID, sig)
				}
				runMu.Unlock()
			}
		case "a":
			if len(f) > 3 {
				id, _ := strconv.Atoi(f[1])
				n, err := strconv.Atoi(f[2])
				if err != nil || n < 0 {
					return // the stream is out of step: nothing later can be trusted
				}
				if !upload(in, id, n, f[3]) {
					return
				}
			}
		case "s", "r", "x":
			j, ok := parseJob(f)
			if ok {
				jobs <- j
			}
		}
	}
}

func upload(in *bufio.Reader, id, n int, kind string) bool {
	if kind == "c" {
		buf := make([]byte, n)
		if _, err := io.ReadFull(in, buf); err != nil {
			return false
		}
		upMu.Lock()
		upScript[id] = append(upScript[id], buf...)
		upMu.Unlock()
		return true
	}
	upMu.Lock()
	f := upStdin[id]
	failed := upFailed[id]
	upMu.Unlock()
	if f == nil && !failed {
		var err error
		f, err = tmpFile(stateDir, "i", id)
		if err != nil {
			failed = true
		}
	}
	var w io.Writer = io.Discard
	if f != nil && !failed {
		w = f
	}
	if _, err := io.CopyN(w, in, int64(n)); err != nil {
		if _, ok := w.(*os.File); !ok {
			return false
		}
		// A write failure (the state tmpfs is full): drain the rest, report at run time.
		failed = true
		if _, err := io.CopyN(io.Discard, in, int64(n)); err != nil {
			return false
		}
	}
	upMu.Lock()
	if failed {
		upFailed[id] = true
		if f != nil {
			f.Close()
		}
		delete(upStdin, id)
	} else {
		upStdin[id] = f
	}
	upMu.Unlock()
	return true
}

// tmpFile opens an unnamed file (O_TMPFILE; create + unlink where that is unsupported) in dir: nothing to
// list, replace or remove later, and its space is freed when the last fd to it closes.
func tmpFile(dir, kind string, id int) (*os.File, error) {
	if ioTmpfile {
		fd, err := syscall.Open(dir, syscall.O_RDWR|syscall.O_CLOEXEC|0x400000 /* O_TMPFILE */, 0o600)
		if err == nil {
			return os.NewFile(uintptr(fd), dir), nil
		}
		if err != syscall.EOPNOTSUPP && err != syscall.EISDIR && err != syscall.EINVAL && err != syscall.ENOENT {
			return nil, err
		}
		ioTmpfile = false
	}
	name := dir + "/" + kind + "." + strconv.Itoa(id)
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	_ = os.Remove(name)
	return f, nil
}

func b64(s string) ([]byte, bool) {
	if s == "-" {
		return nil, true
	}
	b, err := base64.StdEncoding.DecodeString(s)
	return b, err == nil
}

func splitNul(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	return strings.Split(string(b), "\x00")
}

func parseJob(f []string) (job, bool) {
	if len(f) < 4 {
		return job{}, false
	}
	id, e1 := strconv.Atoi(f[1])
	cap1, e2 := strconv.Atoi(f[2])
	if e1 != nil || e2 != nil || cap1 < 1 {
		return job{}, false
	}
	j := job{kind: f[0][0], id: id, cap1: cap1, flags: f[3]}
	switch j.kind {
	case 's':
		if len(f) < 5 {
			return job{}, false
		}
		t, ok := b64(f[4])
		if !ok {
			return job{}, false
		}
		j.text = t
	case 'x':
		if len(f) < 7 {
			return job{}, false
		}
		cwd, ok1 := b64(f[4])
		env, ok2 := b64(f[5])
		argv, ok3 := b64(f[6])
		if !ok1 || !ok2 || !ok3 || len(argv) == 0 {
			return job{}, false
		}
		j.cwd, j.env, j.argv = string(cwd), splitNul(env), splitNul(argv)
	}
	return j, true
}

func runner() {
	for j := range jobs {
		run(&j)
	}
}

func run(j *job) {
	flags := j.flags
	upMu.Lock()
	if j.kind == 'r' {
		j.text = upScript[j.id]
	}
	delete(upScript, j.id)
	stdin := upStdin[j.id]
	delete(upStdin, j.id)
	failed := upFailed[j.id]
	delete(upFailed, j.id)
	upMu.Unlock()
	if stdin != nil {
		defer stdin.Close()
	}
	if failed {
		emit(frame(nil, "y", strconv.Itoa(j.id), "judge-state-write-failed"))
		return
	}
	if strings.Contains(flags, "x") && !sweep() {
		emit(frame(nil, "y", strconv.Itoa(j.id), "agent-processes-survived"))
		return
	}
	in := devNull
	if stdin != nil {
		_, _ = stdin.Seek(0, io.SeekStart)
		in = stdin
	}
	direct := strings.Contains(flags, "d")
	var ofile, efile *os.File
	var err error
	if !direct {
		if ofile, err = tmpFile(ioDir, "o", j.id); err != nil {
			emit(frame(nil, "y", strconv.Itoa(j.id), "judge-state-write-failed"))
			return
		}
		defer ofile.Close()
	}
	if efile, err = tmpFile(ioDir, "e", j.id); err != nil {
		emit(frame(nil, "y", strconv.Itoa(j.id), "judge-state-write-failed"))
		return
	}
	defer efile.Close()
	o0 := oomCount()
	var status int
	if direct {
		// Streamed output: the frame first, then the command writes straight into the channel; nothing else
		// writes until it ends (the runner is the only writer of frames while a command runs).
		outMu.Lock()
		_, _ = out.Write(frame(nil, "o", strconv.Itoa(j.id)))
		status, err = spawnWait(j, !strings.Contains(flags, "J"), in, out, efile)
		outMu.Unlock()
	} else {
		status, err = spawnWait(j, !strings.Contains(flags, "J"), in, ofile, efile)
	}
	if err != nil {
		// fork itself failed (the judge's own resources): an infrastructure fault, as a failed state write.
		emit(frame(nil, "y", strconv.Itoa(j.id), "judge-fork-failed"))
		return
	}
	om := "0"
	if oomCount() != o0 {
		om = "1"
	}
	var b []byte
	if !direct {
		b = appendStream(b, "o", j.id, ofile, j.cap1)
	}
	b = appendStream(b, "e", j.id, efile, j.cap1)
	b = frame(b, "x", strconv.Itoa(j.id), strconv.Itoa(status), om)
	emit(b)
	// Free the tmpfs space now even if a kept background process still holds the file open.
	if ofile != nil {
		_ = ofile.Truncate(0)
	}
	_ = efile.Truncate(0)
	if strings.Contains(flags, "k") {
		sweep()
	}
}

func appendStream(b []byte, kind string, id int, f *os.File, cap1 int) []byte {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return b
	}
	n := int64(cap1)
	if st.Size() < n {
		n = st.Size()
	}
	b = frame(b, kind, strconv.Itoa(id))
	start := len(b)
	b = append(b, make([]byte, n)...)
	got, _ := f.ReadAt(b[start:], 0)
	return b[:start+got]
}

// spawnWait runs the job's command (as the agent when drop) and waits for it: the `wait` status
// (exit code, or 128 + signal).
func spawnWait(j *job, drop bool, stdin, stdout, stderr *os.File) (int, error) {
	s := &spawnSpec{drop: drop, uid: uintptr(agentUID), dataLim: dataLim}
	s.fds = [3]int{int(stdin.Fd()), int(stdout.Fd()), int(stderr.Fd())}
	env := judgeEnv
	var argv []string
	var dir string
	switch {
	case j.kind == 'x':
		argv = j.argv
		dir = j.cwd
		if len(j.env) > 0 {
			env = mergeEnv(judgeEnv, j.env)
		}
	default:
		// argv[0] "sh", as `sh -c` in the sh agent (what `ps` and /proc/<pid>/cmdline show); the file is /bin/sh.
		argv = []string{"sh", "-c", string(j.text), "sandgym"}
		if !drop {
			// Judge commands (graders): their script enters its cwd; they learn the agent uid to start workers.
			dir = stateDir + "/judge"
			env = mergeEnv(judgeEnv, []string{"SANDGYM_AGENT_UID=" + strconv.Itoa(agentUID)})
		}
	}
	if !drop {
		s.dataLim = nil
	}
	var err error
	if s.argv, err = syscall.SlicePtrFromStrings(argv); err != nil {
		return 0, err
	}
	if s.envv, err = syscall.SlicePtrFromStrings(env); err != nil {
		return 0, err
	}
	if dir != "" {
		if s.dir, err = syscall.BytePtrFromString(dir); err != nil {
			return 0, err
		}
	}
	name := argv[0]
	paths := []string{name}
	if j.kind != 'x' {
		paths = []string{"/bin/sh"}
	} else if !strings.Contains(name, "/") {
		dirs := judgePath
		if len(j.env) > 0 {
			dirs = pathOf(env)
		}
		paths = paths[:0]
		for _, d := range dirs {
			if d == "" {
				d = "."
			}
			paths = append(paths, d+"/"+name)
		}
		if len(paths) == 0 {
			paths = append(paths, name)
		}
	}
	for _, p := range paths {
		bp, err := syscall.BytePtrFromString(p)
		if err != nil {
			return 0, err
		}
		s.paths = append(s.paths, bp)
		if j.kind == 'x' {
			sh, err := syscall.SlicePtrFromStrings(append([]string{"/bin/sh", p}, argv[1:]...))
			if err != nil {
				return 0, err
			}
			s.shArgv = append(s.shArgv, sh)
		}
	}
	s.dirMsg = []byte("sandgym: cannot enter " + dir + "\n")
	s.dropMsg = []byte("sandgym: cannot drop to the agent uid\n")
	s.nfMsg = []byte("sandgym: " + name + ": not found\n")
	s.accMsg = []byte("sandgym: " + name + ": cannot execute\n")
	return startWait(j.id, s)
}

func mergeEnv(base, extra []string) []string {
	out := make([]string, 0, len(base)+len(extra))
	keys := make(map[string]bool, len(extra))
	for _, kv := range extra {
		if i := strings.IndexByte(kv, '='); i > 0 {
			keys[kv[:i]] = true
		}
	}
	for _, kv := range base {
		if i := strings.IndexByte(kv, '='); i > 0 && keys[kv[:i]] {
			continue
		}
		out = append(out, kv)
	}
	return append(out, extra...)
}

func startWait(id int, s *spawnSpec) (int, error) {
	syscall.ForkLock.Lock()
	pid, e := forkExec(s)
	syscall.ForkLock.Unlock()
	runtime.KeepAlive(s)
	if e != 0 {
		return 0, e
	}
	runMu.Lock()
	runID, runPID = id, pid
	runMu.Unlock()
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if err != syscall.EINTR {
			break
		}
	}
	runMu.Lock()
	runID, runPID = -1, 0
	runMu.Unlock()
	switch {
	case ws.Exited():
		return ws.ExitStatus(), nil
	case ws.Signaled():
		return 128 + int(ws.Signal()), nil
	}
	return 255, nil
}

func oomCount() string {
	if oomFile == "" {
		return "0"
	}
	b, err := os.ReadFile(oomFile)
	if err != nil {
		return "0"
	}
	for _, l := range bytes.Split(b, []byte{'\n'}) {
		if bytes.HasPrefix(l, []byte("oom_kill ")) {
			return string(bytes.TrimSpace(l[9:]))
		}
	}
	return "0"
}

var statusBuf = make([]byte, 4096)

// agentProcs kills (CAP_KILL) every live process whose real, effective, saved or filesystem uid is the
// agent's, found in /proc/<pid>/status (a process cannot hide from it, unlike /proc/<pid> ownership,
// which PR_SET_DUMPABLE changes); true when there was one.
func agentProcs() bool {
	d, err := os.Open("/proc")
	if err != nil {
		return false
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	found := false
	uid := []byte(strconv.Itoa(agentUID))
	for _, n := range names {
		if n == "" || n[0] < '0' || n[0] > '9' {
			continue
		}
		pid, err := strconv.Atoi(n)
		if err != nil || pid == selfPID {
			continue
		}
		fd, err := syscall.Open("/proc/"+n+"/status", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		k, _ := syscall.Read(fd, statusBuf)
		syscall.Close(fd)
		if k <= 0 {
			continue
		}
		var state, uids []byte
		for _, l := range bytes.Split(statusBuf[:k], []byte{'\n'}) {
			if bytes.HasPrefix(l, []byte("State:")) {
				state = l
			} else if bytes.HasPrefix(l, []byte("Uid:")) {
				uids = l
				break
			}
		}
		if state == nil || bytes.Contains(state, []byte("zombie")) || bytes.Contains(state, []byte("dead")) {
			continue
		}
		for _, u := range bytes.Fields(uids)[1:] {
			if bytes.Equal(u, uid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				found = true
				break
			}
		}
	}
	return found
}

// sweep: nothing of the agent uid survives. kill(-1) as the agent is atomic against fork loops; the scan
// catches what it could not reach (e.g. the agent at RLIMIT_NPROC). False when processes survive 3 s.
func sweep() bool {
	if !agentProcs() {
		return true
	}
	s := &spawnSpec{drop: true, uid: uintptr(agentUID), killAll: true}
	s.fds = [3]int{int(devNull.Fd()), int(devNull.Fd()), int(devNull.Fd())}
	s.dropMsg = []byte("sandgym: cannot drop to the agent uid\n")
	if pid, e := forkExec(s); e == 0 {
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, 0, nil)
	}
	for i := 0; agentProcs(); i++ {
		if i >= 300 {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// killAll kills every process but this one, only inside a sandbox's pid namespace (pid 1 is a known init).
func killAll() {
	c, _ := os.ReadFile("/proc/1/comm")
	switch strings.TrimSpace(string(c)) {
	case "docker-init", "tini", "bwrap", "sandgym-init":
		_ = syscall.Kill(-1, syscall.SIGKILL)
	}
}

func watchdog(ticks int64) {
	var last int64 = -1
	var n int64
	for {
		time.Sleep(5 * time.Second)
		v := lease.Load()
		if v == last {
			n++
		} else {
			n, last = 0, v
		}
		if n >= ticks {
			killAll()
			os.Exit(0)
		}
	}
}
