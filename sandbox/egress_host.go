package sandbox

import "path/filepath"

// ProxySocket is the host path of the egress proxy's socket. A process of
// the launcher's own user may send its requests through the proxy there
// (as an HTTP proxy), under the same policy and secret swapping as the
// sandbox: pairbench's judge does.
func (e *Egress) ProxySocket() string { return filepath.Join(e.dir, proxySocket) }
