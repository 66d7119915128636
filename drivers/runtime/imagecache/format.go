package imagecache

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
)

// The formats an image may have (hostproto.Image.Format).
const (
	formatRaw   = "raw"
	formatQcow2 = "qcow2"
	formatISO   = "iso"
)

// knownFormat reports whether format is one the cache accepts.
func knownFormat(format string) bool {
	switch format {
	case formatRaw, formatQcow2, formatISO:
		return true
	}
	return false
}

var (
	// qcow2Magic starts every qcow2 file.
	qcow2Magic = []byte("QFI\xfb")
	// isoMagic is the standard identifier of an ISO 9660 volume descriptor;
	// the first descriptor is at isoMagicOffset-1.
	isoMagic = []byte("CD001")
)

const isoMagicOffset = 0x8001

// The parts of a qcow2 header (big-endian) that name other files.
const (
	qcow2VersionOffset       = 4  // uint32
	qcow2BackingOffsetOffset = 8  // uint64, 0 when there is no backing file
	qcow2IncompatOffset      = 72 // uint64, version 3 and later
	qcow2ExternalDataBit     = 1 << 2
)

// checkFormat checks that the image in r has the declared format:
//
//   - qcow2 starts with the qcow2 magic, and names no backing file and no
//     external data file, either of which would make the hypervisor read a
//     host file of the image author's choosing;
//   - iso has an ISO 9660 volume descriptor at 0x8000;
//   - raw is anything that does not start with the qcow2 magic: a qcow2
//     declared raw is refused, lest a later probe of its format hand the
//     hypervisor the file names in its header.
func checkFormat(r io.ReaderAt, format string) error {
	switch format {
	case formatQcow2:
		return checkQcow2(r)
	case formatISO:
		if !hasAt(r, isoMagicOffset, isoMagic) {
			return fmt.Errorf("format mismatch: declared iso, but has no ISO 9660 volume descriptor (%q at %#x)", isoMagic, isoMagicOffset)
		}
		return nil
	case formatRaw:
		if hasAt(r, 0, qcow2Magic) {
			return fmt.Errorf("format mismatch: declared raw, but starts with the qcow2 magic")
		}
		return nil
	}
	return fmt.Errorf("unsupported format %q", format)
}

// checkQcow2 checks the qcow2 header at the start of r.
func checkQcow2(r io.ReaderAt) error {
	if !hasAt(r, 0, qcow2Magic) {
		return fmt.Errorf("format mismatch: declared qcow2, but does not start with the qcow2 magic")
	}
	var hdr [qcow2IncompatOffset + 8]byte
	n, _ := r.ReadAt(hdr[:], 0)
	if n < qcow2BackingOffsetOffset+8 {
		return fmt.Errorf("format mismatch: declared qcow2, but the header is cut short")
	}
	if binary.BigEndian.Uint64(hdr[qcow2BackingOffsetOffset:]) != 0 {
		return fmt.Errorf("format refused: qcow2 image names a backing file")
	}
	if binary.BigEndian.Uint32(hdr[qcow2VersionOffset:]) >= 3 {
		if n < len(hdr) {
			return fmt.Errorf("format mismatch: declared qcow2 version 3, but the header is cut short")
		}
		if binary.BigEndian.Uint64(hdr[qcow2IncompatOffset:])&qcow2ExternalDataBit != 0 {
			return fmt.Errorf("format refused: qcow2 image names an external data file")
		}
	}
	return nil
}

// hasAt reports whether r holds want at offset off.
func hasAt(r io.ReaderAt, off int64, want []byte) bool {
	got := make([]byte, len(want))
	n, _ := r.ReadAt(got, off)
	return n == len(want) && bytes.Equal(got, want)
}
