package engine

import (
	"strconv"
	"strings"

	"github.com/linerate/linerate/internal/hostfs"
	"github.com/linerate/linerate/internal/result"
)

// Buffers reads the buffers a data socket got and, when a window was
// asked for, which sysctl capped it: Linux grants min(asked, *mem_max)
// and reports twice that.
func Buffers(fs *hostfs.FS, fd int, window int) result.SockBufs {
	snd, rcv, err := bufSizes(fd)
	if err != nil {
		return result.SockBufs{}
	}
	b := result.SockBufs{Sndbuf: snd, Rcvbuf: rcv}
	if window > 0 && snd < 2*window {
		b.CappedBy = append(b.CappedBy, sysctlValue(fs, "net.core.wmem_max"))
	}
	if window > 0 && rcv < 2*window {
		b.CappedBy = append(b.CappedBy, sysctlValue(fs, "net.core.rmem_max"))
	}
	return b
}

// sysctlValue returns "key=value", or the key alone if unreadable.
func sysctlValue(fs *hostfs.FS, key string) string {
	v, err := fs.ReadInt("proc/sys/" + strings.ReplaceAll(key, ".", "/"))
	if err != nil {
		return key
	}
	return key + "=" + strconv.FormatInt(v, 10)
}
