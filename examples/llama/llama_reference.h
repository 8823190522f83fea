/* A plain-C forward of llama2.c's checkpoint (loops over float arrays, no
 * tensortrace), one token at a time: the independent answer the llama
 * example's --check compares its logits with (llama_reference.c). */
#ifndef LLAMA_REFERENCE_H
#define LLAMA_REFERENCE_H

typedef struct llama_ref llama_ref;
/* NULL when the file cannot be read (the tensortrace loader, which checks
 * the file, runs first and says why). */
llama_ref *llama_ref_load(const char *path);
/* The logits of token at pos (positions fed in order from 0); valid until
 * the next call. */
const float *llama_ref_forward(llama_ref *r, int token, int pos);
int llama_ref_vocab(const llama_ref *r);
void llama_ref_free(llama_ref *r);

#endif
