/*
 * harness.c: runs ethtool's own module EEPROM decoders on one page set.
 *
 * This file is linerate's. It is compiled, by scripts/oracle-ethtool.sh,
 * together with sfpid.c, sfpdiag.c, qsfp.c, cmis.c and sff-common.c (and
 * module-common.c, json_print.c, json_writer.c where the version has them)
 * of ethtool's source, which that script downloads from Debian's archive
 * at run time and never commits. It stands in for the kernel: the
 * decoders' one way to module memory, nl_get_eeprom_page(), answers from
 * the files of a directory laid out as linerate's host trees keep module
 * pages (<i2c hex>-<page hex>-<bank>-<offset>.bin, 128 bytes each), and
 * the module is dispatched by its identifier as `ethtool -m` does. What
 * it prints is what `ethtool -m` would print for a module answering with
 * those pages.
 *
 * Usage: harness DIR    exit 0 decoded, 3 identifier not decoded by
 *                       this ethtool, 2 a page could not be read.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "netlink/extapi.h"

static const char *dir;

/* readhalf fills buf with the 128 bytes of one file, or returns -1. */
static int readhalf(unsigned i2c, unsigned page, unsigned bank, unsigned off, unsigned char *buf)
{
	char path[4096];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%02x-%02x-%u-%u.bin", dir, i2c, page, bank, off);
	f = fopen(path, "rb");
	if (!f)
		return -1;
	n = fread(buf, 1, 128, f);
	fclose(f);
	if (n != 128)
		return -1;
	return 0;
}

int nl_get_eeprom_page(struct cmd_context *ctx __maybe_unused,
		       struct ethtool_module_eeprom *request)
{
	unsigned char half[128];
	unsigned int i;

	if (!request || request->offset + request->length > 256)
		return -EINVAL;
	request->data = calloc(1, request->length ? request->length : 1);
	if (!request->data)
		return -ENOMEM;
	/* A read may span both halves (SFF-8079 reads 256 bytes at once). */
	for (i = 0; i < request->length; ) {
		unsigned int at = request->offset + i;
		unsigned int base = at < 128 ? 0 : 128;
		unsigned int page = base ? request->page : 0;
		unsigned int bank = base ? request->bank : 0;
		unsigned int take = base + 128 - at;

		if (take > request->length - i)
			take = request->length - i;
		if (readhalf(request->i2c_address, page, bank, base, half) < 0)
			return -EIO;
		memcpy(request->data + i, half + (at - base), take);
		i += take;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct cmd_context ctx;
	unsigned char lower[128];
	int ret;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 1;
	}
	dir = argv[1];
	memset(&ctx, 0, sizeof(ctx));
	ctx.devname = "oracle0";
	if (readhalf(0x50, 0, 0, 0, lower) < 0) {
		fprintf(stderr, "%s: no lower page\n", dir);
		return 2;
	}
	/* As netlink/module-eeprom.c's eeprom_parse() dispatches. */
	switch (lower[0]) {
	case 0x03:
		ret = sff8079_show_all_nl(&ctx);
		break;
	case 0x0C:
	case 0x0D:
	case 0x11:
		ret = sff8636_show_all_nl(&ctx);
		break;
	case 0x18:
	case 0x19:
	case 0x1B:
#ifdef ORACLE_CMIS_ALL
	/* Newer ethtool versions dispatch these to CMIS too. */
	case 0x1E:
#endif
		ret = cmis_show_all_nl(&ctx);
		break;
	default:
		fprintf(stderr, "identifier 0x%02x: not decoded by this ethtool\n", lower[0]);
		return 3;
	}
	fflush(stdout);
	return ret < 0 ? 2 : 0;
}
