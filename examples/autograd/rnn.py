"""A recurrent neural network on characters, after HIPS autograd's examples/rnn.py (trimmed: it reads the source of
Python's argparse module, and the training length is a flag). examples/autograd/rnn.py runs on autograd and
examples/rnn_from_autograd.py on tapegrad: only their imports differ (docs/guide/from-autograd.md shows how).

    python examples/rnn_from_autograd.py               # 100 Adam steps on 60 lines of text
    python examples/rnn_from_autograd.py --iters 20
"""

import argparse
import inspect

import autograd.numpy as np
import autograd.numpy.random as npr
from autograd import grad
from autograd.misc.optimizers import adam
from autograd.scipy.special import logsumexp


def create_rnn_params(input_size, state_size, output_size, param_scale=0.01, rs=None):
    rs = npr.RandomState(0) if rs is None else rs
    return {
        "init hiddens": rs.randn(1, state_size) * param_scale,
        "change": rs.randn(input_size + state_size + 1, state_size) * param_scale,
        "predict": rs.randn(state_size + 1, output_size) * param_scale,
    }


def concat_and_multiply(weights, *args):
    cat_state = np.hstack(args + (np.ones((args[0].shape[0], 1)),))
    return np.dot(cat_state, weights)


def rnn_predict(params, inputs):
    def update_rnn(input, hiddens):
        return np.tanh(concat_and_multiply(params["change"], input, hiddens))

    def hiddens_to_output_probs(hiddens):
        output = concat_and_multiply(params["predict"], hiddens)
        return output - logsumexp(output, axis=1, keepdims=True)  # Normalize log-probs.

    num_sequences = inputs.shape[1]
    hiddens = np.repeat(params["init hiddens"], num_sequences, axis=0)
    output = [hiddens_to_output_probs(hiddens)]

    for input in inputs:  # Iterate over time steps.
        hiddens = update_rnn(input, hiddens)
        output.append(hiddens_to_output_probs(hiddens))
    return output


def rnn_log_likelihood(params, inputs, targets):
    logprobs = rnn_predict(params, inputs)
    loglik = 0.0
    num_time_steps, num_examples, _ = inputs.shape
    for t in range(num_time_steps):
        loglik += np.sum(logprobs[t] * targets[t])
    return loglik / (num_time_steps * num_examples)


def string_to_one_hot(string, maxchar):
    """Converts an ASCII string to a one-of-k encoding."""
    ascii = np.array([ord(c) for c in string]).T
    return np.array(ascii[:, None] == np.arange(maxchar)[None, :], dtype=int)


def build_dataset(text, sequence_length, alphabet_size, max_lines=-1):
    lines = [line for line in text.splitlines() if line.strip()][:max_lines]
    seqs = np.zeros((sequence_length, len(lines), alphabet_size))
    for ix, line in enumerate(lines):
        padded_line = (line + " " * sequence_length)[:sequence_length]
        seqs[:, ix, :] = string_to_one_hot(padded_line, alphabet_size)
    return seqs


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--iters", type=int, default=100, help="Adam steps")
    parser.add_argument("--lines", type=int, default=60, help="lines of text to train on")
    args = parser.parse_args(argv)
    num_chars = 128
    train_inputs = build_dataset(inspect.getsource(argparse), 30, num_chars, args.lines)
    init_params = create_rnn_params(input_size=num_chars, output_size=num_chars, state_size=40, param_scale=0.01)

    def training_loss(params, iter):
        return -rnn_log_likelihood(params, train_inputs, train_inputs)

    def callback(weights, iter, gradient):
        if iter % 10 == 0:
            print(f"Iteration {iter:3d} Train loss: {training_loss(weights, 0):.4f}")

    training_loss_grad = grad(training_loss)
    trained_params = adam(training_loss_grad, init_params, step_size=0.1, num_iters=args.iters, callback=callback)
    return trained_params, training_loss(trained_params, 0)


if __name__ == "__main__":
    main()
