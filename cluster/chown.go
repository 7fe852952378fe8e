package cluster

import (
	"io/fs"
	"os"
	"path/filepath"
)

func filepathWalkChown(root string, uid, gid int) error {
	return filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}
