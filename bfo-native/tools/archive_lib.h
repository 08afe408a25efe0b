/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libarchive, loaded with dlopen when a command first reads a tar stream
 * (archive_lib_load): linked, it and what it pulls in (libxml2, ICU,
 * libstdc++, six compressors) were loaded by every bfo command, about
 * 30 ms of a cold start where `bfo read` of 100,000 files takes 0.5 s.
 *
 * The functions bfo uses are one table; each name below is a macro for
 * its entry, so the code calling them reads as libarchive's own.  Call
 * them only after archive_lib_load() returned NULL.
 */
#ifndef BFO_ARCHIVE_LIB_H
#define BFO_ARCHIVE_LIB_H

#include <archive.h>
#include <archive_entry.h>

#define ARCHIVE_LIB_FUNCTIONS(X) \
	X(archive_entry_atime) \
	X(archive_entry_atime_is_set) \
	X(archive_entry_atime_nsec) \
	X(archive_entry_filetype) \
	X(archive_entry_gid) \
	X(archive_entry_hardlink) \
	X(archive_entry_mtime) \
	X(archive_entry_mtime_nsec) \
	X(archive_entry_pathname) \
	X(archive_entry_perm) \
	X(archive_entry_rdevmajor) \
	X(archive_entry_rdevminor) \
	X(archive_entry_size) \
	X(archive_entry_symlink) \
	X(archive_entry_uid) \
	X(archive_error_string) \
	X(archive_read_data) \
	X(archive_read_free) \
	X(archive_read_new) \
	X(archive_read_next_header) \
	X(archive_read_open) \
	X(archive_read_open_memory) \
	X(archive_read_support_filter_bzip2) \
	X(archive_read_support_filter_compress) \
	X(archive_read_support_filter_gzip) \
	X(archive_read_support_filter_lz4) \
	X(archive_read_support_filter_lzip) \
	X(archive_read_support_filter_lzma) \
	X(archive_read_support_filter_xz) \
	X(archive_read_support_filter_zstd) \
	X(archive_read_support_format_empty) \
	X(archive_read_support_format_tar)

struct archive_lib {
#define ARCHIVE_LIB_ENTRY(name) __typeof__(name) *name;
	ARCHIVE_LIB_FUNCTIONS(ARCHIVE_LIB_ENTRY)
#undef ARCHIVE_LIB_ENTRY
};
extern struct archive_lib archive_lib;

/* Load libarchive (once): NULL, or why it could not be loaded. */
const char *archive_lib_load(void);

#ifndef ARCHIVE_LIB_IMPL
#define archive_entry_atime (*archive_lib.archive_entry_atime)
#define archive_entry_atime_is_set (*archive_lib.archive_entry_atime_is_set)
#define archive_entry_atime_nsec (*archive_lib.archive_entry_atime_nsec)
#define archive_entry_filetype (*archive_lib.archive_entry_filetype)
#define archive_entry_gid (*archive_lib.archive_entry_gid)
#define archive_entry_hardlink (*archive_lib.archive_entry_hardlink)
#define archive_entry_mtime (*archive_lib.archive_entry_mtime)
#define archive_entry_mtime_nsec (*archive_lib.archive_entry_mtime_nsec)
#define archive_entry_pathname (*archive_lib.archive_entry_pathname)
#define archive_entry_perm (*archive_lib.archive_entry_perm)
#define archive_entry_rdevmajor (*archive_lib.archive_entry_rdevmajor)
#define archive_entry_rdevminor (*archive_lib.archive_entry_rdevminor)
#define archive_entry_size (*archive_lib.archive_entry_size)
#define archive_entry_symlink (*archive_lib.archive_entry_symlink)
#define archive_entry_uid (*archive_lib.archive_entry_uid)
#define archive_error_string (*archive_lib.archive_error_string)
#define archive_read_data (*archive_lib.archive_read_data)
#define archive_read_free (*archive_lib.archive_read_free)
#define archive_read_new (*archive_lib.archive_read_new)
#define archive_read_next_header (*archive_lib.archive_read_next_header)
#define archive_read_open (*archive_lib.archive_read_open)
#define archive_read_open_memory (*archive_lib.archive_read_open_memory)
#define archive_read_support_filter_bzip2 (*archive_lib.archive_read_support_filter_bzip2)
#define archive_read_support_filter_compress (*archive_lib.archive_read_support_filter_compress)
#define archive_read_support_filter_gzip (*archive_lib.archive_read_support_filter_gzip)
#define archive_read_support_filter_lz4 (*archive_lib.archive_read_support_filter_lz4)
#define archive_read_support_filter_lzip (*archive_lib.archive_read_support_filter_lzip)
#define archive_read_support_filter_lzma (*archive_lib.archive_read_support_filter_lzma)
#define archive_read_support_filter_xz (*archive_lib.archive_read_support_filter_xz)
#define archive_read_support_filter_zstd (*archive_lib.archive_read_support_filter_zstd)
#define archive_read_support_format_empty (*archive_lib.archive_read_support_format_empty)
#define archive_read_support_format_tar (*archive_lib.archive_read_support_format_tar)
#endif

#endif
