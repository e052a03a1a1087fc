/* The harness plugin ABI: plain C, so that a plugin built with another compiler or another
 * libstdc++ ABI (LibTorch) can be loaded safely. Only fixed-width integers, enums, `const char*`,
 * plain structs and pointers to float buffers cross this boundary; nothing throws across it.
 *
 * A plugin exports one symbol, `hb_plugin_entry`, returning its function table. The table starts
 * with `api_version` and `struct_size`; it only ever grows at the end. The harness rejects a table
 * whose major version differs from its own, naming both versions.
 *
 * Growing without breaking (a minor version): the function table, the structs that carry
 * `struct_size` and the graph's elements (whose sizes the graph carries) only grow at the end. A
 * field added so means "as before" when zero; a function added so may be NULL (the plugin lacks
 * it) and is announced by a capability flag. Neither side reads past the size the other gave.
 *
 * Canonical exchange format: float32, dense, host memory; activations NCHW, conv weights OIHW. */
#ifndef HB_PLUGIN_H
#define HB_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HB_API_VERSION_MAJOR 2
#define HB_API_VERSION_MINOR 5
#define HB_API_VERSION ((uint32_t)((HB_API_VERSION_MAJOR << 16) | HB_API_VERSION_MINOR))
#define HB_API_MAJOR(v) ((uint32_t)(v) >> 16)
#define HB_API_MINOR(v) ((uint32_t)(v)&0xffffu)

#define HB_ENTRY_SYMBOL "hb_plugin_entry"

#if defined(_WIN32)
#define HB_EXPORT __declspec(dllexport)
#else
#define HB_EXPORT __attribute__((visibility("default")))
#endif

typedef enum hb_status {
    HB_OK = 0,
    HB_ERROR = 1,         /* any failure; the message says what */
    HB_UNAVAILABLE = 2,   /* the requested device or feature is not usable here */
    HB_OUT_OF_MEMORY = 3, /* host or device allocation failed */
    HB_UNSUPPORTED = 4    /* the graph, option or call is not implemented by this plugin */
} hb_status;

/* -------------------------------------------------------- the model graph (docs/design.md §4) */

/* Each kind's forward pass, then (after "backward:") the gradient it must pass back, which
 * harness check compares with a float64 oracle's. A value read by several layers gets the sum of
 * their gradients. */
typedef enum hb_layer_kind {
    /* hb_layer's conv2d fields. backward: dx the transposed convolution of dy with w; dw[o][c][i][j]
     * = sum over n, h, w of dy[o][h][w] x[c][s h + i - p][s w + j - p]; db[o] = sum of dy[o]. */
    HB_LAYER_CONV2D = 0,
    /* hb_layer's batchnorm fields, training mode. backward (x^ = (x - mean) / sqrt(var + eps),
     * per channel over its m values): dbeta = sum dy; dgamma = sum dy x^; dx = gamma /
     * sqrt(var + eps) (dy - dbeta / m - x^ dgamma / m), through the batch statistics (gamma 1 where
     * there is no weight). The running statistics take no gradient. */
    HB_LAYER_BATCHNORM = 1,
    /* max(x, 0). backward: dx = dy where x > 0, and 0 where x <= 0 (at exactly 0 too). */
    HB_LAYER_RELU = 2,
    /* 2x2, stride 2. backward: each window's dy to its first maximum in row-major order (the
     * earliest of tied values), 0 to the other three. */
    HB_LAYER_MAXPOOL2D = 3,
    /* nearest, factor 2. backward: dx the sum of dy over each 2x2 block. */
    HB_LAYER_UPSAMPLE = 4,
    /* n-ary elementwise sum. backward: every input gets dy. */
    HB_LAYER_ADD = 5,
    /* loss_weight * mean((input - target)^2) over N x C x H x W, a scalar; the step's loss is the
     * sum of every such layer. backward: d input = loss_weight 2 (input - target) / (N C H W). */
    HB_LAYER_MSE_LOSS = 6
} hb_layer_kind;

typedef enum hb_tensor_role {
    HB_ROLE_WEIGHT = 0, /* conv OIHW weight, or BN gamma */
    HB_ROLE_BIAS = 1,   /* conv bias, or BN beta */
    HB_ROLE_RUNNING_MEAN = 2,
    HB_ROLE_RUNNING_VAR = 3
} hb_tensor_role;

/* An activation: every layer output is a distinct value (the graph is in SSA form). */
typedef struct hb_value {
    const char* name;
    int64_t shape[4]; /* N, C, H, W; a loss value is 1 x 1 x 1 x 1 */
} hb_value;

/* A state tensor: a trainable parameter or a BN running statistic. */
typedef struct hb_tensor {
    const char* name; /* "<layer>.weight", "<layer>.bias", "<layer>.running_mean", ... */
    int32_t layer;    /* index into hb_graph.layers */
    hb_tensor_role role;
    int32_t rank;
    int64_t shape[4];
    int32_t trainable; /* 1 for weights and biases, 0 for running statistics */
} hb_tensor;

typedef struct hb_layer {
    const char* name; /* stable hierarchical name, e.g. "stack0.hg.low2.up1.conv2" */
    hb_layer_kind kind;
    int32_t num_inputs;
    const int32_t* inputs; /* value indices */
    int32_t output;        /* value index */

    /* conv2d: a square kernel, `padding` zeros on every side, out = (in + 2 padding - kernel) /
     * stride + 1; y = sum over c, i, j of w[o][c][i][j] x[c][s h + i - p][s w + j - p] (+ b[o]) */
    int32_t in_channels, out_channels, kernel, stride, padding;
    int32_t weight; /* tensor index, or -1; for batchnorm: gamma */
    int32_t bias;   /* tensor index, or -1; for batchnorm: beta */

    /* batchnorm, in training mode: per channel, over the m = N H W values of the batch, the mean
     * and the biased variance var = mean((x - mean)^2); y = gamma (x - mean) / sqrt(var + eps) +
     * beta (gamma 1 and beta 0 where the tensor index is -1); then, after the forward pass,
     * running_mean = (1 - momentum) running_mean + momentum mean and running_var = (1 - momentum)
     * running_var + momentum var m / (m - 1), the unbiased variance. */
    int32_t running_mean, running_var; /* tensor indices, or -1 */
    float momentum, eps;

    /* mse_loss */
    float loss_weight;
} hb_layer;

typedef struct hb_graph {
    /* The sizes in bytes of this struct and of one element of `values`, `tensors` and `layers`,
     * as the harness built them: a plugin steps through the arrays by these sizes and reads only
     * the fields it knows of (hb::import_graph does both). */
    uint32_t struct_size, value_size, tensor_size, layer_size;
    int32_t num_values;
    const hb_value* values;
    int32_t num_layers;
    const hb_layer* layers; /* in a valid execution order */
    int32_t num_tensors;
    const hb_tensor* tensors; /* construction order */
    int32_t input;            /* value index of the image batch, N x 3 x S x S */
    int64_t target_shape[4];  /* the heatmap target every mse_loss layer compares with */
    /* The training loss is the sum of the outputs of every mse_loss layer. */
} hb_graph;

/* A graph without elements, with this header's sizes. */
static inline hb_graph hb_empty_graph(void) {
    hb_graph graph;
    memset(&graph, 0, sizeof graph);
    graph.struct_size = (uint32_t)sizeof(hb_graph);
    graph.value_size = (uint32_t)sizeof(hb_value);
    graph.tensor_size = (uint32_t)sizeof(hb_tensor);
    graph.layer_size = (uint32_t)sizeof(hb_layer);
    return graph;
}

/* ----------------------------------------------------------- the optimizer (docs/design.md §4) */

/* RMSProp, element by element, for every trainable tensor p with the step's loss gradient g:
 *   g' = g + weight_decay p                       (g' = g when weight_decay is 0)
 *   v  = alpha v + (1 - alpha) g'^2                (v starts at initial_square_average)
 *   d  = sqrt(v) + eps       (torch)   or   sqrt(v + eps)   (tensorflow)
 * then, without momentum, p -= learning_rate g' / d; with momentum (b starts at 0):
 *   torch:      b = momentum b + g' / d;                  p -= learning_rate b
 *   tensorflow: b = momentum b + learning_rate g' / d;    p -= b */
typedef enum hb_rmsprop_variant {
    HB_RMSPROP_TORCH = 0,     /* torch.optim.RMSprop; configs start v at 0 */
    HB_RMSPROP_TENSORFLOW = 1 /* tf.train.RMSPropOptimizer; configs start v at 1 */
} hb_rmsprop_variant;

typedef struct hb_optimizer {
    hb_rmsprop_variant variant;
    float learning_rate;
    float alpha; /* the decay of the squared-gradient average */
    float eps;
    float momentum;               /* 0 = none */
    float weight_decay;           /* 0 = none */
    float initial_square_average; /* v0, for every element */
} hb_optimizer;

/* ------------------------------------------------------------------------------ sessions */

typedef enum hb_placement {
    HB_PLACEMENT_DEVICE = 0, /* batches handed over once, before timing */
    HB_PLACEMENT_HOST = 1    /* each step takes its batch from host memory; that copy is timed */
} hb_placement;

typedef struct hb_option {
    const char* key;
    const char* value;
} hb_option;

typedef struct hb_session_desc {
    uint32_t struct_size;
    const hb_graph* graph;
    const hb_optimizer* optimizer;
    const char* device; /* "cpu", "cuda:0", ... */
    hb_placement placement;
    int32_t num_options;
    const hb_option* options; /* backend options; a plugin rejects keys it does not know */
    /* ABI 2.3: 1 asks every step to compute the gradient of the loss with respect to its input
     * batch too (read_input_gradient; HB_CAP_INPUT_GRADIENT); 0, as before: the input needs none.
     * A description from an older harness ends before this field (hb::wants_input_gradient). */
    int32_t input_gradient;
    /* ABI 2.5: 1 when the harness reads the gradients back after steps (harness check's
     * sessions); 0 in a timed session, which never calls read_gradients: a backend that must
     * fetch its gradients out of the step (a graph-mode framework) fetches them only when 1. A
     * description from an older harness ends before this field, and hb::reads_back says 1. */
    int32_t read_back;
} hb_session_desc;

typedef struct hb_step_result {
    uint32_t struct_size;
    double loss;
    /* Phase times in milliseconds, or a negative value when the plugin does not measure them
     * (HB_CAP_PHASE_TIMES). forward_ms runs from the step's start to its loss: it includes
     * staging the batch (with HB_PLACEMENT_HOST, the copy from host memory; with
     * HB_PLACEMENT_DEVICE, choosing the batch already there). backward_ms is every gradient;
     * optimizer_ms the update. Together they are the step, less what the plugin does between. */
    double forward_ms;
    double backward_ms;
    double optimizer_ms;
} hb_step_result;

/* ------------------------------------------------- per-operation profiling (ABI 2.1, §3) */

/* What an operation of a profiled step computes. */
typedef enum hb_phase {
    HB_PHASE_FORWARD = 0,
    HB_PHASE_BACKWARD_DATA = 1,    /* the gradient of a layer's inputs */
    HB_PHASE_BACKWARD_WEIGHTS = 2, /* the gradient of a layer's parameters */
    HB_PHASE_BACKWARD = 3,         /* both in one operation (an autograd node, say) */
    HB_PHASE_UPDATE = 4,           /* the optimizer */
    HB_PHASE_LOSS = 5,             /* loss work outside any mse_loss layer (their sum, its seed) */
    HB_PHASE_REORDER = 6,          /* a layout conversion or a copy within one memory */
    HB_PHASE_TRANSFER = 7,         /* a copy between host and device memory */
    HB_PHASE_OTHER = 8
} hb_phase;

/* One operation of a profiled step. Times are milliseconds from the step's start on the clock
 * that timed the operation: the host's for host work, the stream's (events) for device work. An
 * operation nested in another is not reported, so a track's events never overlap. */
typedef struct hb_event {
    const char* name; /* what ran: "convolution", "reorder", "aten::add_", ... */
    int32_t layer;    /* index into hb_graph.layers, or -1 when it belongs to no layer */
    hb_phase phase;
    const char* track; /* the thread or stream it ran on: "main", "stream 0", ... */
    double start_ms, end_ms;
} hb_event;

/* ------------------------------------------- data-parallel steps (ABI 2.2, docs/parallel.md) */

typedef enum hb_memory {
    HB_MEMORY_HOST = 0,
    HB_MEMORY_DEVICE = 1 /* the session's device, ordered by hb_gradient_buffers.stream */
} hb_memory;

/* Where the gradient of one trainable tensor lives between forward_backward and apply_update:
 * `elements` float32 values in the plugin's own layout, any padding zero. An all-reduce adds
 * element by element, so every rank need only use the same layout. */
typedef struct hb_gradient_buffer {
    int32_t tensor; /* index into hb_graph.tensors */
    hb_memory memory;
    float* data;
    int64_t elements;
} hb_gradient_buffer;

typedef struct hb_gradient_buffers {
    uint32_t struct_size;
    uint32_t buffer_size;              /* bytes from one element of `buffers` to the next */
    int32_t count;                     /* one per trainable tensor */
    const hb_gradient_buffer* buffers; /* in the order the backward pass completes them */
    /* Device memory: the stream (a cudaStream_t) the session's work is ordered on; else NULL. */
    void* stream;
} hb_gradient_buffers;

/* Called by forward_backward on the calling thread, once for each buffer (an index into
 * hb_gradient_buffers.buffers) as soon as its gradient is final: written, in host memory; its
 * last producing work enqueued on the stream, in device memory. */
typedef void (*hb_gradient_ready)(void* context, int32_t buffer);

/* ---------------------------------------------------------------------------- descriptions */

typedef struct hb_library_version {
    const char* name;
    const char* version;
} hb_library_version;

typedef struct hb_device_info {
    const char* name; /* "cpu", "cuda:0" */
    const char* description;
    int32_t available;
    const char* unavailable_reason; /* NULL when available */
} hb_device_info;

/* What hb_plugin_info.capabilities announces. Each flag promises that the calls it names work;
 * the harness makes those calls only when the flag is announced, and does without as said. */
enum {
    /* read_gradients works after a step. Without it, harness check never asks for gradients: it
     * compares the losses, the state and the parameters ("not compared: gradients"), and refuses
     * the plugin as its baseline. */
    HB_CAP_GRADIENTS = 1u << 0,
    /* step (and forward_backward, apply_update) fills forward_ms, backward_ms and optimizer_ms,
     * as hb_step_result defines them. Without it the harness ignores them: the phase columns of
     * the CSV stay empty, and harness layers (without HB_CAP_PROFILE too) times whole steps. */
    HB_CAP_PHASE_TIMES = 1u << 1,
    /* peak_memory reports the most memory a session held. Without it the harness does not ask,
     * and peak_memory_mb stays empty. */
    HB_CAP_PEAK_MEMORY = 1u << 2,
    /* A session created with HB_PLACEMENT_HOST takes each step's batch from host memory, the
     * copy inside the timed step. Without it, placement: host is refused at its place in the
     * config before anything runs, and create_session refuses it (HB_UNSUPPORTED). */
    HB_CAP_HOST_PLACEMENT = 1u << 3,
    /* ABI 2.1: set_profiling and read_events work. Without it, a profiled or traced run (--profile,
     * --trace, --explain) says the plugin cannot profile and times its steps as usual. */
    HB_CAP_PROFILE = 1u << 4,
    /* ABI 2.2: gradient_buffers, forward_backward and apply_update work (docs/parallel.md).
     * Without it, a data-parallel row of more than one rank fails: "has no data-parallel steps". */
    HB_CAP_DATA_PARALLEL = 1u << 5,
    /* ABI 2.3: read_input_gradient works in a session created with input_gradient = 1. Without
     * it, harness check does not compare the input's gradient ("not compared: gradient input"). */
    HB_CAP_INPUT_GRADIENT = 1u << 6
};

/* ABI 2.4: one option that create_session takes, as a config writes it (a string). */
typedef enum hb_option_type {
    HB_OPTION_BOOL = 0,  /* true, false (also 1, 0, on, off, yes, no) */
    HB_OPTION_INT = 1,   /* a decimal integer in [min, max] */
    HB_OPTION_CHOICE = 2 /* one of `choices` */
} hb_option_type;

typedef struct hb_option_spec {
    const char* key;
    hb_option_type type;
    int64_t min, max; /* HB_OPTION_INT: the inclusive range */
    int32_t num_choices;
    const char* const* choices; /* HB_OPTION_CHOICE: the values it takes */
    const char* description;    /* one line: what it chooses */
    /* ABI 2.5: the value the option takes when a config does not set it, as a config writes it;
     * NULL when unset means something no value says (the description says what). */
    const char* default_value;
} hb_option_spec;

typedef struct hb_plugin_info {
    uint32_t struct_size;
    const char* name;
    const char* version;
    const char* description;
    uint32_t capabilities; /* HB_CAP_* flags */
    int32_t num_libraries;
    const hb_library_version* libraries;
    int32_t num_devices;
    const hb_device_info* devices;
    /* ABI 2.4: every option create_session takes, each `option_size` bytes apart, so that the
     * harness rejects an unknown or ill-typed option at its place in the config before anything
     * runs. `option_size` 0 (or an info that ends before it): the options are not declared, and
     * only create_session checks them. */
    uint32_t option_size;
    int32_t num_options;
    const hb_option_spec* options;
} hb_plugin_info;

typedef struct hb_session hb_session; /* opaque, owned by the plugin */

/* Every pointer the plugin returns stays valid until the next call on the same object (or, for
 * plugin-level data, for the life of the process). Buffers the harness passes in are only
 * borrowed for the duration of the call. */
typedef struct hb_plugin_api {
    uint32_t api_version; /* HB_API_VERSION the plugin was built with */
    uint32_t struct_size; /* sizeof(hb_plugin_api) the plugin was built with */

    /* The message of the last failed plugin-level call (describe, create_session) on this thread.
     */
    const char* (*last_error)(void);

    hb_status (*describe)(const hb_plugin_info** info);

    hb_status (*create_session)(const hb_session_desc* desc, hb_session** session);
    void (*destroy_session)(hb_session* session);
    /* The message of the last failed call on this session. */
    const char* (*session_error)(const hb_session* session);

    /* All of graph->tensors, in order (parameters and running statistics), from host buffers. */
    hb_status (*load_state)(hb_session* session, const float* const* tensors);
    /* Optimizer state (the squared-gradient average), one buffer per trainable tensor in order. */
    hb_status (*load_optimizer_state)(hb_session* session, const float* const* square_averages);
    /* The data batches, cycled through by step(); inputs N x 3 x S x S, targets = target_shape. */
    hb_status (*set_batches)(hb_session* session, int32_t count, const float* const* inputs,
                             const float* const* targets);
    /* One training step on batch `batch`; returns when all its work is complete. */
    hb_status (*step)(hb_session* session, int32_t batch, hb_step_result* result);

    /* Read back all graph->tensors (parameters and running statistics) into host buffers. */
    hb_status (*read_state)(hb_session* session, float* const* tensors);
    /* The gradients of the last step, one buffer per tensor; running statistics are skipped
     * (their pointers may be NULL). */
    hb_status (*read_gradients)(hb_session* session, float* const* gradients);

    hb_status (*peak_memory)(hb_session* session, uint64_t* bytes);
    /* A JSON object: what the plugin actually ran (math mode under "math", algorithms, layouts,
     * fusions, workspace, thread count). */
    hb_status (*manifest)(hb_session* session, const char** json);

    /* ABI 2.1, announced by HB_CAP_PROFILE (NULL, or absent from a shorter table, otherwise). */
    /* Per-operation events on (1) or off (0) for the steps that follow; off in a new session. */
    hb_status (*set_profiling)(hb_session* session, int32_t enabled);
    /* The events of the last step (none when it ran unprofiled), each `event_size` bytes apart:
     * read only the fields of an hb_event that fit. */
    hb_status (*read_events)(hb_session* session, const hb_event** events, int32_t* count,
                             uint32_t* event_size);

    /* ABI 2.2, announced by HB_CAP_DATA_PARALLEL: step() in two halves, with the gradients
     * reachable between them (docs/parallel.md). step(b) computes what forward_backward(b)
     * followed by apply_update() computes. */
    /* The session's gradient buffers, the same for the life of the session. */
    hb_status (*gradient_buffers)(hb_session* session, const hb_gradient_buffers** buffers);
    /* The forward and backward passes of a step on batch `batch`; `ready` (may be NULL) hears of
     * each gradient as it is final. On return every buffer holds its gradient (device memory:
     * once the stream's work so far is complete). Fills loss, forward_ms and backward_ms. */
    hb_status (*forward_backward)(hb_session* session, int32_t batch, hb_gradient_ready ready,
                                  void* context, hb_step_result* result);
    /* The optimizer's update of the last forward_backward, from what the buffers hold now (device
     * memory: after the stream's work enqueued so far); returns when it is complete. Fills
     * optimizer_ms. */
    hb_status (*apply_update)(hb_session* session, hb_step_result* result);

    /* ABI 2.3, announced by HB_CAP_INPUT_GRADIENT, in a session created with input_gradient = 1:
     * the gradient of the last step's loss (or the last forward_backward's) with respect to its
     * input batch, N x 3 x S x S, NCHW, into a host buffer. What conformance compares to see where
     * the first layers send their gradients (a max pool's tie-breaking, say: docs/conformance.md),
     * which no parameter gradient shows. */
    hb_status (*read_input_gradient)(hb_session* session, float* gradient);
} hb_plugin_api;

typedef const hb_plugin_api* (*hb_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* HB_PLUGIN_H */
