// Command etcd is etcd's server, built from the go.etcd.io/etcd/server/v3 module at the version
// k8s.io/kubernetes itself requires, so the test cluster needs no etcd package from the system.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
