/* FPSTORE_EXPORT marks the declarations the shared library exports. fpstore
 * is built with hidden visibility, so what this header does not mark (lib/'s
 * internals, test hooks included) is not part of the library's ABI. */

#ifndef FPSTORE_EXPORT_H_
#define FPSTORE_EXPORT_H_

#if defined(__cplusplus) && (defined(__GNUC__) || defined(__clang__))
#define FPSTORE_EXPORT [[gnu::visibility("default")]]
#elif defined(__GNUC__) || defined(__clang__)
#define FPSTORE_EXPORT __attribute__((visibility("default")))
#else
#define FPSTORE_EXPORT
#endif

#endif /* FPSTORE_EXPORT_H_ */
