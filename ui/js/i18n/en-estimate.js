// English texts of the "Pick a card → Estimate" screen.
/** @type {Record<string, string>} */
export default {
  'pick.tab.estimate': 'Estimate a job',
  'pick.tab.catalog': 'Card catalog',

  'est.title': 'Which card, how many, how long, and what will it cost?',
  'est.intro':
    'Describe the job. gpurent adds up the memory it needs — weights, KV cache, activations, gradients, optimizer, overhead — and checks every card, starting with yours.',
  'est.presets': 'Start from',
  'preset.ollama7b': 'Chat with qwen2.5:7b in Ollama',
  'preset.lora7b': 'LoRA a 7B',
  'preset.qlora70b': 'QLoRA a 70B',
  'preset.pretrain1b': 'Pre-train 1B on 20B tokens',

  'est.model': 'Model',
  'est.model.custom': 'Custom model…',
  'est.task': 'Job',
  'task.infer': 'Inference / chat',
  'task.lora': 'LoRA fine-tune',
  'task.qlora': 'QLoRA fine-tune',
  'task.full': 'Full fine-tune',
  'task.pretrain': 'Pre-training',
  'est.quant': 'Weights',
  'est.quant.auto': 'Automatic for this job',
  'est.engine': 'Engine',
  'engine.transformers': 'transformers',
  'engine.vllm': 'vLLM',
  'engine.llama_cpp': 'llama.cpp / Ollama',
  'est.context': 'Context (tokens)',
  'est.batch': 'Batch',
  'est.gpus': 'GPUs',
  'est.tokens': 'Training tokens (billions)',
  'est.optimizer': 'Optimizer',
  'optimizer.adamw': 'AdamW',
  'optimizer.adamw_8bit': 'AdamW 8-bit',
  'optimizer.paged_adamw': 'Paged AdamW',
  'optimizer.paged_adamw_8bit': 'Paged AdamW 8-bit',
  'optimizer.sgd_momentum': 'SGD with momentum',
  'optimizer.sgd': 'SGD',
  'est.gradckpt': 'Gradient checkpointing',
  'est.custom.params': 'Parameters (billions)',
  'est.custom.layers': 'Layers',
  'est.custom.hidden': 'Hidden size',
  'est.custom.heads': 'Attention heads',
  'est.custom.kvheads': 'KV heads',
  'est.custom.headdim': 'Head dim',
  'est.custom.vocab': 'Vocabulary',
  'est.custom.tied': 'Tied embeddings',
  'est.custom.hint':
    'Only the parameter count is required; without the shape, KV cache and activations are shown as uncertain.',
  'est.cost.title': 'Cost details and buying your own card',
  'est.cost.gen': 'Tokens to generate (millions)',
  'est.cost.storage_gb': 'Disk kept (GB)',
  'est.cost.storage_price': 'Disk price per GB-month',
  'est.cost.egress_gb': 'Data downloaded (GB)',
  'est.cost.egress_price': 'Download price per GB',
  'est.cost.ckpt': 'Checkpoint every (min, for spot)',
  'est.cost.buy': 'Price to buy one card',
  'est.cost.kwh': 'Electricity per kWh',
  'est.cost.util': 'Your use of an own card (%)',
  'est.cost.hint':
    'Money is never converted: use the currency of your prices. Buying pays off when the rent you save covers the card and its electricity.',
  'est.run': 'Estimate',

  'est.memory': 'Memory per GPU',
  'est.total': '{total} GiB per GPU',
  'est.total.gpus': '{total} GiB per GPU × {gpus} GPUs',
  'est.bar.card': '{gb} GB card',
  'bucket.weights': 'Weights',
  'bucket.kv_cache': 'KV cache',
  'bucket.activations': 'Activations',
  'bucket.gradients': 'Gradients',
  'bucket.optimizer': 'Optimizer & adapters',
  'bucket.overhead': 'Overhead',
  'est.why': 'Why',
  'est.uncertain': 'Uncertain',
  'est.cards': 'Cards for this job',
  'est.col.card': 'Card',
  'est.col.verdict': 'Fits?',
  'est.col.mem': 'Per GPU / usable',
  'est.col.speed': 'Speed',
  'est.col.time': 'Time',
  'est.col.price': 'Your price / GPU-hour',
  'est.col.cost': 'Cost of the job',
  'verdict.fits_on1': 'Fits on 1',
  'verdict.fits_on_n': 'Fits on {n}',
  'verdict.partial_offload': 'Partly on CPU',
  'verdict.does_not_fit': 'Does not fit',
  'est.speed.decode': '{tps} tokens/s',
  'est.speed.train': '{tps} tokens/s',
  'est.time.days': '{days} days',
  'est.time.hours': '{hours} h',
  'est.local': 'Your GPU',
  'est.local.none': 'No local NVIDIA GPU found',
  'est.local.nodriver': 'No local NVIDIA GPU found (no NVIDIA driver on this computer)',
  'est.local.found': '{name}, {gib} GiB',
  'est.price.none': 'gpurent ships no prices: enter what your platform charges per GPU-hour and it is remembered.',
  'est.price.save': 'Save',
  'est.price.placeholder': 'e.g. 2.5',
  // The cost column with the user's own prices (the amount formatted with its currency's sign).
  'est.cost.per_million': '{cost} / 1M tokens',
  'est.cost.per_hour': '{cost}/h',
  'est.price.unit': '{sign}/h',
  'est.nvlink': 'needs NVLink',

  'expl.memory_summary':
    'This job needs {total} GiB per GPU on {gpus} GPU(s): weights {weights} GiB, KV cache {kv} GiB, activations {act} GiB.',
  'expl.kv_cache_dominates':
    'The KV cache for {context} tokens of context is {kv} GiB; cut the context to {suggested} tokens to fit a {card} GB card.',
  'expl.enable_grad_checkpointing':
    'Activations take {act} GiB; gradient checkpointing cuts them to about {act2} GiB for ~30 % more compute.',
  'expl.logits_large':
    'The logits (vocabulary {vocab} × tokens) take {logits} GiB; a chunked or fused loss removes most of that.',
  'expl.optimizer_states_dominate': 'Optimizer states take {opt} GiB; 8-bit Adam would need about {opt8} GiB.',
  'expl.weights_exceed_largest_card':
    'The weights alone are {weights} GiB — more than the largest single card ({card} GB), so the job needs several GPUs.',
  'expl.best_fit': 'Smallest setup that fits: {gpus} × {card} ({per_gpu} GiB of a {card_gb} GB card each).',
  'expl.nvlink_matters':
    '{gpus} × {card}: the GPUs exchange data every step, so cards with NVLink are much faster here than PCIe-only ones.',
  'expl.partial_offload':
    'On a {card}, Ollama would keep {on} of {total} layers on the GPU ({pct} %) and run the rest on the CPU — it works, but slowly.',
  'expl.vllm_reserves':
    'vLLM reserves {util} % of the card up front ({reserved} GiB of a {card} GB card) and fills what the model leaves with KV cache: room for about {tokens} tokens.',
  'expl.training_time':
    'About {days} days on {gpus} × {card} at {mfu} % of its {peak} TFLOPS peak (6 × parameters × tokens).',
  'expl.mfu_assumed': 'Assumes {mfu} % model-FLOPs utilisation; measured runs on 8 × H100 reached {low}–{high} %.',
  'expl.project_hours_exceed_estimate':
    'Whole projects take longer than 6·N·D: Llama 3.1 8B’s published GPU-hours correspond to only {eff} % effective utilisation (restarts, evaluations, experiments).',
  'expl.spot_needs_checkpoints':
    'Spot machines can be taken away at any time: each interruption can lose up to {loss} h of this {hours} h job. Save checkpoints often.',
  'expl.spot_needs_checkpoints.interval':
    'Spot machines can be taken away at any time: with a checkpoint every {interval} min, each interruption loses up to {loss} h of this {hours} h job.',
  'expl.cheapest_offer': 'Cheapest of your prices: {gpus} × {card}, {cost} for the job.',
  'expl.cheapest_offer.tokens': 'Cheapest of your prices: {gpus} × {card}, {cost} per million generated tokens.',
  'expl.cheapest_offer.hourly':
    'Cheapest of your prices: {gpus} × {card}. Enter training tokens to see the cost of the whole job.',
  'expl.rent_vs_buy': 'Buying a {card} pays off after about {months} months at {util} % use ({hours} GPU-hours).',
  'expl.rent_vs_buy.never':
    'Buying a {card} never pays off at these prices: its electricity alone costs more than renting.',

  'unc.activations_unknown_shape': 'Activations need the model’s shape (layers, hidden size); they are left out.',
  'unc.cpu_bandwidth_unknown':
    'Your computer’s memory bandwidth is unknown, so the speed of the CPU part is a rough guess.',
  'unc.graph_formula_not_for_arch':
    'Ollama’s compute-buffer formula is not published for this architecture; the value is approximate.',
  'unc.kv_cache_unknown_shape': 'The KV cache needs the model’s shape (layers, KV heads, head dim); it is left out.',
  'unc.llama_cpp_speed_uncalibrated': 'llama.cpp speed is not calibrated against measurements yet.',
  'unc.lora_unknown_shape': 'LoRA adapter size needs the model’s shape; it is approximate.',
  'unc.hf_launch_bound':
    'With transformers on one GPU, speed at batch 1 is limited by how fast the CPU launches GPU work; a slower host CPU means fewer tokens per second.',
  'unc.low_bit_kernel_speed': 'Speed of low-bit kernels varies a lot between libraries; treat it as approximate.',
  'unc.paged_optimizer_residency':
    'Paged optimizers move states to CPU memory under pressure; GPU memory may be lower.',
  'unc.peak_tflops_unverified': 'This card’s peak TFLOPS is not confirmed by a primary source.',
  'unc.quant_bits_unsourced': 'The bits per weight of this format are not from a primary source.',
  'unc.sliding_window_not_modelled': 'Sliding-window attention is not modelled: the KV cache may be smaller.',
  'unc.speed_unknown_shape': 'Speed needs the model’s shape; it is left out.',
  'unc.vllm_profile_peak': 'vLLM’s start-up profiling peak depends on its version and settings.',
  'unc.bf16_unsupported':
    'Some cards that fit have no bf16: there the job runs in fp16, and some models overflow in fp16.',
  'expl.bf16_unsupported':
    '{cards} have no bf16 (compute capability below 8.0): run the model in fp16 there (e.g. vLLM --dtype half), or pick a card with bf16.',
  'expl.bf16_unsupported.training':
    '{cards} have no bf16 (compute capability below 8.0): train in fp16 with loss scaling there (fp16=True instead of bf16=True), or pick a card with bf16.',
};
