package viewer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"time"

	"github.com/pairbench/pairbench/rundir"
)

// CheckLoopback refuses an address the site may not be served on: it is
// for this machine only, a loopback address (127.0.0.1 or ::1) and a port
// (0 picks a free one).
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--addr %q: view serves on a loopback address only (127.0.0.1 or ::1)", addr)
	}
	return nil
}

// Serve serves the report site of the run directory dir (Handler) on the
// loopback address addr until ctx ends, then stops, giving the requests
// under way 5 seconds. Once it listens it calls ready with the URL of the
// run page. It returns nil when ctx ended it.
func Serve(ctx context.Context, dir, addr string, ready func(url string)) error {
	if err := CheckLoopback(addr); err != nil {
		return err
	}
	h, err := Handler(dir)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("view: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	ready("http://" + ln.Addr().String() + "/" + rundir.ReportHTML)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("view: %w", err)
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shut)
}

// OpenInBrowser asks the desktop to open url in its browser (xdg-open),
// without waiting for the browser. The error says why it could not.
func OpenInBrowser(url string) error {
	open, err := exec.LookPath("xdg-open")
	if err != nil {
		return errors.New("no xdg-open here")
	}
	cmd := exec.Command(open, url)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("could not open a browser (%w)", err)
	}
	go cmd.Wait()
	return nil
}
