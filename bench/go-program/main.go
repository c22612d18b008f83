// Command goprogram is the Go program of the app-layer benchmark's layer: a web server of the
// standard library serving assets embedded in the binary (as programs that ship their own web UI
// do), with a toolbox of subcommands linking the modules the Go toolchain vendors (pprof, the
// analysis passes, x/mod, x/net, x/text, x/crypto), so that its build information lists real
// modules at real versions. bench/app-layer.ts writes its go.mod, vendor/ and assets/ before building it.
package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"debug/dwarf"
	"debug/elf"
	"embed"
	"encoding/json"
	"encoding/xml"
	"expvar"
	"fmt"
	"go/ast"
	"go/format"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"html/template"
	"image"
	_ "image/gif"
	_ "image/jpeg"
	_ "image/png"
	"io/fs"
	"log"
	"math/big"
	"net/http"
	_ "net/http/pprof"
	"net/rpc"
	"net/smtp"
	"os"
	"regexp"
	texttemplate "text/template"

	"github.com/google/pprof/driver"
	"github.com/google/pprof/profile"
	"github.com/ianlancetaylor/demangle"
	"golang.org/x/arch/arm64/arm64asm"
	"golang.org/x/arch/x86/x86asm"
	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/ed25519"
	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/sumdb"
	modzip "golang.org/x/mod/zip"
	"golang.org/x/net/http/httpproxy"
	"golang.org/x/net/http2/hpack"
	"golang.org/x/net/idna"
	"golang.org/x/sync/semaphore"
	"golang.org/x/sys/unix"
	"golang.org/x/term"
	"golang.org/x/text/unicode/norm"
	"golang.org/x/tools/go/analysis/passes/asmdecl"
	"golang.org/x/tools/go/analysis/passes/assign"
	"golang.org/x/tools/go/analysis/passes/atomic"
	"golang.org/x/tools/go/analysis/passes/bools"
	"golang.org/x/tools/go/analysis/passes/copylock"
	"golang.org/x/tools/go/analysis/passes/httpresponse"
	"golang.org/x/tools/go/analysis/passes/loopclosure"
	"golang.org/x/tools/go/analysis/passes/lostcancel"
	"golang.org/x/tools/go/analysis/passes/printf"
	"golang.org/x/tools/go/analysis/passes/shift"
	"golang.org/x/tools/go/analysis/passes/structtag"
	"golang.org/x/tools/go/analysis/passes/unreachable"
	"golang.org/x/tools/go/analysis/unitchecker"
)

//go:embed assets
var assets embed.FS

func main() {
	if len(os.Args) < 2 {
		serve()
		return
	}
	if err := run(os.Args[1], os.Args[2:]); err != nil {
		log.Fatal(err)
	}
}

func serve() {
	root, err := fs.Sub(assets, "assets")
	if err != nil {
		log.Fatal(err)
	}
	expvar.NewInt("assets")
	http.Handle("/", http.FileServer(http.FS(root)))
	server := &http.Server{Addr: ":8080", TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12}}
	log.Fatal(server.ListenAndServe())
}

func run(command string, args []string) error {
	switch command {
	case "vet":
		unitchecker.Main(asmdecl.Analyzer, assign.Analyzer, atomic.Analyzer, bools.Analyzer, copylock.Analyzer,
			httpresponse.Analyzer, loopclosure.Analyzer, lostcancel.Analyzer, printf.Analyzer, shift.Analyzer,
			structtag.Analyzer, unreachable.Analyzer)
	case "pprof":
		return driver.PProf(&driver.Options{})
	case "profile":
		p, err := profile.Parse(os.Stdin)
		if err == nil {
			fmt.Println(p.String())
		}
		return err
	case "demangle":
		fmt.Println(demangle.Filter(args[0]))
	case "disasm":
		code, err := os.ReadFile(args[0])
		if err != nil {
			return err
		}
		x86, _ := x86asm.Decode(code, 64)
		arm, _ := arm64asm.Decode(code)
		fmt.Println(x86.String(), arm.String())
	case "mod":
		data, err := os.ReadFile(args[0])
		if err != nil {
			return err
		}
		file, err := modfile.Parse(args[0], data, nil)
		if err != nil {
			return err
		}
		for _, r := range file.Require {
			fmt.Println(r.Mod.Path, r.Mod.Version, semver.Major(r.Mod.Version))
		}
		_ = sumdb.NewClient(nil)
		return modzip.CreateFromDir(os.Stdout, module.Version{Path: file.Module.Mod.Path, Version: "v0.0.0"}, ".")
	case "seal":
		aead, err := chacha20poly1305.New(make([]byte, chacha20poly1305.KeySize))
		if err != nil {
			return err
		}
		public, private, _ := ed25519.GenerateKey(nil)
		sealed := aead.Seal(nil, make([]byte, aead.NonceSize()), ed25519.Sign(private, []byte(args[0])), public)
		var headers bytes.Buffer
		_ = hpack.NewEncoder(&headers).WriteField(hpack.HeaderField{Name: "sealed", Value: fmt.Sprintf("%x", sealed)})
		host, _ := idna.ToASCII(norm.NFC.String(args[0]))
		fmt.Println(headers.Len(), host, httpproxy.FromEnvironment().HTTPSProxy)
	case "source":
		fileSet := token.NewFileSet()
		file, err := parser.ParseFile(fileSet, args[0], nil, parser.ParseComments)
		if err != nil {
			return err
		}
		info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
		_, err = (&types.Config{Importer: importer.Default()}).Check(file.Name.Name, fileSet, []*ast.File{file}, info)
		var out bytes.Buffer
		_ = format.Node(&out, fileSet, file)
		fmt.Println(out.Len(), len(info.Types), err)
	case "archive":
		return archive(args)
	case "binary":
		file, err := elf.Open(args[0])
		if err != nil {
			return err
		}
		data, err := file.DWARF()
		if err == nil {
			reader := data.Reader()
			entry, _ := reader.Next()
			fmt.Println(entry != nil && entry.Tag == dwarf.TagCompileUnit)
		}
	case "render":
		page := template.Must(template.New("page").Parse(`<h1>{{.}}</h1>`))
		text := texttemplate.Must(texttemplate.New("text").Parse(`{{.}}`))
		_ = text.Execute(os.Stdout, regexp.MustCompile(`\s+`).ReplaceAllString(args[0], " "))
		return page.Execute(os.Stdout, args[0])
	case "image":
		file, err := os.Open(args[0])
		if err != nil {
			return err
		}
		defer file.Close()
		config, kind, err := image.DecodeConfig(file)
		fmt.Println(config.Width, config.Height, kind)
		return err
	case "encode":
		doc, _ := xml.Marshal(struct{ Value string }{args[0]})
		return json.NewEncoder(os.Stdout).Encode(map[string]any{"xml": string(doc), "big": new(big.Int).Exp(big.NewInt(2), big.NewInt(256), nil)})
	case "certs":
		pool, err := x509.SystemCertPool()
		if err == nil {
			fmt.Println(len(pool.Subjects()))
		}
		return err
	case "remote":
		client, err := rpc.Dial("tcp", args[0])
		if err != nil {
			return err
		}
		defer client.Close()
		mail, err := smtp.Dial(args[0])
		if err == nil {
			mail.Close()
		}
		_, err = sql.Open(args[0], args[0])
		return err
	case "limits":
		weighted := semaphore.NewWeighted(int64(unix.Getpagesize()))
		fmt.Println(weighted.TryAcquire(1), term.IsTerminal(int(os.Stdout.Fd())))
	default:
		return fmt.Errorf("unknown command %s", command)
	}
	return nil
}

func archive(names []string) error {
	compressed := gzip.NewWriter(os.Stdout)
	tarball := tar.NewWriter(compressed)
	for _, name := range names {
		reader, err := zip.OpenReader(name)
		if err != nil {
			return err
		}
		for _, member := range reader.File {
			_ = tarball.WriteHeader(&tar.Header{Name: member.Name, Size: int64(member.UncompressedSize64), Mode: 0o644})
		}
		reader.Close()
	}
	if err := tarball.Close(); err != nil {
		return err
	}
	return compressed.Close()
}
