package proc

import "syscall"

// dieWithParent has the kernel kill the process when converge dies, even
// by SIGKILL: an agent whose parent is gone has no one to stop it at its
// budget, and a resumed run would find it still editing the tree. (The
// signal follows the thread that started the process; Go keeps its
// threads for the life of the process unless one is locked and left.)
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
