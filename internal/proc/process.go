package proc

// Process is one entry of the process table (Processes): what Run needs
// to find what a process started, and tests to see what is left.
type Process struct {
	PID, PPID, PGID int
	Zombie          bool
	// Start is when it started, in clock ticks after boot: with PID, it
	// names one process ever.
	Start uint64
}
