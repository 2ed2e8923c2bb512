package local

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// caPolicyPath holds the browser's policy that trusts the run's CAs
// (Config.CACerts), beside policyPath.
const caPolicyPath = "/etc/chromium/policies/managed/pairbench-ca.json"

// policyFiles are the browser sandbox's policy files: chromiumPolicy, and
// with CACerts a policy that trusts them (Chromium's CACertificates: the
// certificates are trust anchors for the browser's TLS, as the system's).
func (c Config) policyFiles() map[string]string {
	files := map[string]string{policyPath: chromiumPolicy}
	if len(c.CACerts) == 0 {
		return files
	}
	ders := make([]string, len(c.CACerts))
	for i, cert := range c.CACerts {
		ders[i] = base64.StdEncoding.EncodeToString(cert.Raw)
	}
	b, _ := json.Marshal(map[string]any{"CACertificates": ders})
	files[caPolicyPath] = string(b)
	return files
}

// ReadCACerts reads the certificate authorities of a PEM bundle (--ca-cert):
// every CERTIFICATE block, each of which must be a CA's certificate. A file
// with none is an error.
func ReadCACerts(path string) ([]*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--ca-cert: %w", err)
	}
	var certs []*x509.Certificate
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("--ca-cert %s: certificate %d: %w", path, len(certs)+1, err)
		}
		if !cert.IsCA {
			return nil, fmt.Errorf("--ca-cert %s: certificate %d (%s) is not a CA's: give the CA that signed the site's certificate", path, len(certs)+1, cert.Subject)
		}
		certs = append(certs, cert)
	}
	if len(certs) == 0 {
		return nil, errors.New("--ca-cert " + path + ": no PEM CERTIFICATE block in the file")
	}
	return certs, nil
}
