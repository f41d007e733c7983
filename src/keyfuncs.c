/*-------------------------------------------------------------------------
 *
 * keyfuncs.c
 *	  SQL functions zorder_key(VARIADIC "any") and hilbert_key(VARIADIC
 *	  "any"): order-preserving space-filling-curve keys over raw values.
 *
 * Each argument is encoded as an unsigned big-endian byte string whose
 * memcmp order follows the type's default btree order (strictly, or
 * non-decreasing for prefix and lossy encodings):
 *
 *	type                        bytes  encoding                         order
 *	--------------------------  -----  -------------------------------  ----------
 *	boolean                     1      false = 0, true = 1              strict
 *	smallint                    2      two's complement, sign bit       strict
 *	                                   flipped, big-endian
 *	integer                     4      same                             strict
 *	bigint                      8      same                             strict
 *	oid                         4      unsigned, big-endian             strict
 *	real                        4      IEEE bits; negatives inverted,   strict
 *	                                   sign bit set on positives;
 *	                                   -0 = 0; every NaN = all ones,
 *	                                   above +Infinity
 *	double precision            8      same                             strict
 *	numeric                     8      converted to double precision    non-decr.
 *	                                   (rounded; beyond its range
 *	                                   +-Infinity; NaN above all),
 *	                                   then as double precision
 *	date                        4      day number as integer            strict
 *	                                   (+-infinity at the ends)
 *	time                        8      microseconds as bigint           strict
 *	timestamp, timestamptz      8      microseconds as bigint           strict
 *	                                   (+-infinity at the ends)
 *	text, varchar, unknown      16     first 16 bytes, zero-padded:     non-decr.
 *	                                   byte order, as COLLATE "C"
 *	character (bpchar)          16     same, trailing spaces ignored    non-decr.
 *	                                   as bpcharcmp does
 *	bytea                       16     first 16 bytes, zero-padded      non-decr.
 *	uuid                        16     the 16 bytes                     strict
 *
 * A domain is encoded as its base type.  Any other type is rejected.
 * Strings and bytea values longer than 16 bytes are only fetched (and
 * decompressed) up to their first 16 bytes.
 *
 * Key layout: with W the widest encoding among the arguments, every argument
 * becomes a coordinate of 1 + 8W bits: a null flag (0 for a value, 1 for
 * NULL) followed by its encoding left-aligned in W bytes, zero-padded on the
 * right; a NULL is the flag followed by zero bits, so it comes after every
 * value of that argument (ASC NULLS LAST).  zorder_key interleaves the
 * coordinates bit level by bit level, argument 1 first; hilbert_key maps
 * them to the Hilbert curve.  The key has ceil(d * (1 + 8W) / 8) bytes for
 * d arguments, so calls with the same argument types always give keys of the
 * same length and bytea comparison orders them by the curve.  With a single
 * argument both keys order exactly like the encoded value.  zorder_key is
 * non-decreasing in every argument; hilbert_key is not monotone in any
 * argument but keeps neighbouring keys close in every one.
 *
 * An explicit VARIADIC array is accepted: its elements are the arguments
 * (all of the element type; NULL elements are NULL arguments).  A NULL array
 * gives a NULL key.  The key length then depends on the number of elements.
 *
 * Between 1 and ZK_MAX_DIMS (8) arguments are accepted.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "keyenc.h"
#include "pg_compat.h"

PG_FUNCTION_INFO_V1(zorder_key);
PG_FUNCTION_INFO_V1(hilbert_key);

/* Widest encoding, and the prefix kept of strings and bytea. */
#define KEY_MAX_WIDTH	16
#define KEY_PREFIX_WIDTH 16

typedef enum KeyEncoding
{
	KE_BOOL,
	KE_INT2,
	KE_INT4,
	KE_INT8,
	KE_OID,
	KE_FLOAT4,
	KE_FLOAT8,
	KE_NUMERIC,
	KE_TEXT,					/* text, varchar, bytea: prefix */
	KE_BPCHAR,
	KE_CSTRING,					/* unknown-type literals */
	KE_UUID
} KeyEncoding;

typedef struct ArgEncoder
{
	KeyEncoding enc;
	int			width;			/* bytes of the encoding */
} ArgEncoder;

/* What a call site needs, worked out once and kept in fn_extra. */
typedef struct KeyCallInfo
{
	bool		from_array;		/* explicit VARIADIC array */
	int			nargs;			/* argument count, unless from_array */
	int			width;			/* W: widest encoding of the arguments */
	ArgEncoder	args[ZK_MAX_DIMS];	/* args[0] is the element if from_array */
	Oid			elemtype;		/* from_array: element type and storage */
	int16		elmlen;
	bool		elmbyval;
	char		elmalign;
} KeyCallInfo;

static void
report_too_many(const char *fname, int nargs, bool from_array)
{
	ereport(ERROR,
			(errcode(ERRCODE_TOO_MANY_ARGUMENTS),
			 errmsg("%s accepts at most %d arguments", fname, ZK_MAX_DIMS),
			 from_array ?
			 errdetail("The VARIADIC array has %d elements.", nargs) :
			 errdetail("The call has %d arguments.", nargs)));
}

/* The encoding of type typid, or an error naming the argument (1-based). */
static ArgEncoder
lookup_encoder(Oid typid, const char *fname, int argno)
{
	ArgEncoder	a;

	switch (getBaseType(typid))
	{
		case BOOLOID:
			a.enc = KE_BOOL;
			a.width = 1;
			break;
		case INT2OID:
			a.enc = KE_INT2;
			a.width = 2;
			break;
		case INT4OID:
		case DATEOID:
			a.enc = KE_INT4;
			a.width = 4;
			break;
		case INT8OID:
		case TIMEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			/* all int64 microsecond counts, infinities at the extremes */
			a.enc = KE_INT8;
			a.width = 8;
			break;
		case OIDOID:
			a.enc = KE_OID;
			a.width = 4;
			break;
		case FLOAT4OID:
			a.enc = KE_FLOAT4;
			a.width = 4;
			break;
		case FLOAT8OID:
			a.enc = KE_FLOAT8;
			a.width = 8;
			break;
		case NUMERICOID:
			a.enc = KE_NUMERIC;
			a.width = 8;
			break;
		case TEXTOID:
		case VARCHAROID:
		case BYTEAOID:
			a.enc = KE_TEXT;
			a.width = KEY_PREFIX_WIDTH;
			break;
		case BPCHAROID:
			a.enc = KE_BPCHAR;
			a.width = KEY_PREFIX_WIDTH;
			break;
		case UNKNOWNOID:
			a.enc = KE_CSTRING;
			a.width = KEY_PREFIX_WIDTH;
			break;
		case UUIDOID:
			a.enc = KE_UUID;
			a.width = UUID_LEN;
			break;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("%s does not support type %s",
							fname, format_type_be(typid)),
					 errdetail("Argument %d has type %s.",
							   argno, format_type_be(typid))));
			pg_unreachable();
	}
	return a;
}

static Oid
arg_type(FunctionCallInfo fcinfo, int i, const char *fname)
{
	Oid			t = get_fn_expr_argtype(fcinfo->flinfo, i);

	if (!OidIsValid(t))
		ereport(ERROR,
				(errcode(ERRCODE_INDETERMINATE_DATATYPE),
				 errmsg("could not determine data type of argument %d of %s",
						i + 1, fname)));
	return t;
}

static KeyCallInfo *
setup_call(FunctionCallInfo fcinfo, const char *fname)
{
	KeyCallInfo *info;
	int			i;

	info = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(KeyCallInfo));
	info->from_array = get_fn_expr_variadic(fcinfo->flinfo);

	if (info->from_array)
	{
		Oid			arraytype = arg_type(fcinfo, 0, fname);

		info->elemtype = get_base_element_type(arraytype);
		if (!OidIsValid(info->elemtype))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("VARIADIC argument of %s must be an array", fname)));
		info->args[0] = lookup_encoder(info->elemtype, fname, 1);
		info->width = info->args[0].width;
		get_typlenbyvalalign(info->elemtype, &info->elmlen, &info->elmbyval,
							 &info->elmalign);
	}
	else
	{
		info->nargs = PG_NARGS();
		if (info->nargs > ZK_MAX_DIMS)
			report_too_many(fname, info->nargs, false);
		for (i = 0; i < info->nargs; i++)
		{
			info->args[i] = lookup_encoder(arg_type(fcinfo, i, fname), fname,
										   i + 1);
			info->width = Max(info->width, info->args[i].width);
		}
	}

	fcinfo->flinfo->fn_extra = info;
	return info;
}

/* Copy the first bytes of a string or bytea, fetching no more than needed. */
static void
encode_prefix(Datum d, uint8 *out)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(d);
	struct varlena *s = v;

	if (VARATT_IS_EXTERNAL(v) || VARATT_IS_COMPRESSED(v))
		s = pg_detoast_datum_slice(v, 0, KEY_PREFIX_WIDTH);
	zk_encode_bytes_prefix((const uint8 *) VARDATA_ANY(s),
						   VARSIZE_ANY_EXHDR(s), out, KEY_PREFIX_WIDTH);
	if (s != v)
		pfree(s);
}

/*
 * bpchar needs the whole value: whether spaces at the end of a prefix are
 * trailing depends on what follows them.
 */
static void
encode_bpchar(Datum d, uint8 *out)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(d);
	struct varlena *s = pg_detoast_datum_packed(v);
	const char *p = VARDATA_ANY(s);
	int			len = VARSIZE_ANY_EXHDR(s);

	while (len > 0 && p[len - 1] == ' ')
		len--;
	zk_encode_bytes_prefix((const uint8 *) p, len, out, KEY_PREFIX_WIDTH);
	if (s != v)
		pfree(s);
}

/*
 * Write the coordinate of one argument: the null flag bit, then the value's
 * encoding left-aligned in width bytes; width + 1 bytes in all.
 */
static void
encode_coord(const ArgEncoder *a, Datum d, bool isnull, int width,
			 uint8 *coord)
{
	uint8		val[KEY_MAX_WIDTH];
	int			k;

	if (isnull)
	{
		coord[0] = 0x80;
		memset(coord + 1, 0, width);
		return;
	}

	switch (a->enc)
	{
		case KE_BOOL:
			val[0] = DatumGetBool(d) ? 1 : 0;
			break;
		case KE_INT2:
			zk_encode_int16(DatumGetInt16(d), val);
			break;
		case KE_INT4:
			zk_encode_int32(DatumGetInt32(d), val);
			break;
		case KE_INT8:
			zk_encode_int64(DatumGetInt64(d), val);
			break;
		case KE_OID:
			zk_encode_uint32(DatumGetObjectId(d), val);
			break;
		case KE_FLOAT4:
			zk_encode_float4(DatumGetFloat4(d), val);
			break;
		case KE_FLOAT8:
			zk_encode_float8(DatumGetFloat8(d), val);
			break;
		case KE_NUMERIC:
			/* strtod rounding is monotone, so order survives the loss */
			zk_encode_float8(DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow,
																d)),
							 val);
			break;
		case KE_TEXT:
			encode_prefix(d, val);
			break;
		case KE_BPCHAR:
			encode_bpchar(d, val);
			break;
		case KE_CSTRING:
			{
				const char *s = DatumGetCString(d);

				zk_encode_bytes_prefix((const uint8 *) s, strlen(s), val,
									   KEY_PREFIX_WIDTH);
				break;
			}
		case KE_UUID:
			memcpy(val, DatumGetUUIDP(d)->data, UUID_LEN);
			break;
	}
	if (a->width < width)
		memset(val + a->width, 0, width - a->width);

	/* shift right by one bit behind the flag (0: not null) */
	coord[0] = val[0] >> 1;
	for (k = 1; k < width; k++)
		coord[k] = (uint8) ((val[k - 1] << 7) | (val[k] >> 1));
	coord[width] = (uint8) (val[width - 1] << 7);
}

static Datum
curve_key(FunctionCallInfo fcinfo, bool hilbert, const char *fname)
{
	KeyCallInfo *info = (KeyCallInfo *) fcinfo->flinfo->fn_extra;
	uint8		coordbuf[ZK_MAX_DIMS][KEY_MAX_WIDTH + 1];
	const uint8 *coords[ZK_MAX_DIMS];
	int			nargs;
	int			nbits;
	size_t		keylen;
	bytea	   *result;
	int			i;

	if (info == NULL)
		info = setup_call(fcinfo, fname);

	if (info->from_array)
	{
		ArrayType  *arr;
		Datum	   *elems;
		bool	   *nulls;

		if (PG_ARGISNULL(0))
			PG_RETURN_NULL();
		arr = PG_GETARG_ARRAYTYPE_P(0);
		/* count before deconstructing: the array may be huge */
		nargs = ArrayGetNItems(ARR_NDIM(arr), ARR_DIMS(arr));
		if (nargs == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s requires at least one argument", fname),
					 errdetail("The VARIADIC array is empty.")));
		if (nargs > ZK_MAX_DIMS)
			report_too_many(fname, nargs, true);
		deconstruct_array(arr, info->elemtype, info->elmlen, info->elmbyval,
						  info->elmalign, &elems, &nulls, &nargs);
		for (i = 0; i < nargs; i++)
			encode_coord(&info->args[0], elems[i], nulls[i], info->width,
						 coordbuf[i]);
		pfree(elems);
		pfree(nulls);
	}
	else
	{
		nargs = info->nargs;
		for (i = 0; i < nargs; i++)
			encode_coord(&info->args[i], PG_GETARG_DATUM(i), PG_ARGISNULL(i),
						 info->width, coordbuf[i]);
	}

	for (i = 0; i < nargs; i++)
		coords[i] = coordbuf[i];
	nbits = 1 + 8 * info->width;
	keylen = ((size_t) nargs * nbits + 7) / 8;
	result = (bytea *) palloc(VARHDRSZ + keylen);
	SET_VARSIZE(result, VARHDRSZ + keylen);
	if (hilbert)
		zk_hilbert(nargs, nbits, coords, (uint8 *) VARDATA(result));
	else
		zk_morton(nargs, nbits, coords, (uint8 *) VARDATA(result));

	PG_RETURN_BYTEA_P(result);
}

Datum
zorder_key(PG_FUNCTION_ARGS)
{
	return curve_key(fcinfo, false, "zorder_key");
}

Datum
hilbert_key(PG_FUNCTION_ARGS)
{
	return curve_key(fcinfo, true, "hilbert_key");
}
