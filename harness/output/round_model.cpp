#include "output/round_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

namespace harness::output {

namespace {

using Matrix = std::vector<std::vector<double>>;

// The least variance a backend is given: a sd of 1e-6 of the time, far below any timing's noise.
constexpr double kLeastVariance = 1e-12;

// The inverse of symmetric `a` by Gauss-Jordan elimination with partial pivoting; none when a
// pivot vanishes against the matrix's scale (a level the cells do not determine).
std::optional<Matrix> inverse(Matrix a) {
    const size_t n = a.size();
    double scale = 0;
    for (const auto& row : a)
        for (double v : row) scale = std::max(scale, std::abs(v));
    Matrix inv(n, std::vector<double>(n, 0));
    for (size_t i = 0; i < n; ++i) inv[i][i] = 1;
    for (size_t col = 0; col < n; ++col) {
        size_t pivot = col;
        for (size_t r = col + 1; r < n; ++r)
            if (std::abs(a[r][col]) > std::abs(a[pivot][col])) pivot = r;
        if (!(std::abs(a[pivot][col]) > 1e-9 * scale)) return std::nullopt;
        std::swap(a[pivot], a[col]);
        std::swap(inv[pivot], inv[col]);
        const double p = a[col][col];
        for (size_t k = 0; k < n; ++k) {
            a[col][k] /= p;
            inv[col][k] /= p;
        }
        for (size_t r = 0; r < n; ++r) {
            if (r == col || a[r][col] == 0) continue;
            const double f = a[r][col];
            for (size_t k = 0; k < n; ++k) {
                a[r][k] -= f * a[col][k];
                inv[r][k] -= f * inv[col][k];
            }
        }
    }
    return inv;
}

// Digamma, trigamma and its derivative: the recurrences up to 6, then their asymptotic series.
double digamma(double x) {
    double sum = 0;
    for (; x < 6; ++x) sum -= 1 / x;
    const double i2 = 1 / (x * x);
    return sum + std::log(x) - 0.5 / x - i2 * (1.0 / 12 - i2 * (1.0 / 120 - i2 / 252));
}

double trigamma(double x) {
    double sum = 0;
    for (; x < 6; ++x) sum += 1 / (x * x);
    const double i2 = 1 / (x * x);
    return sum + 1 / x + i2 / 2 + i2 / x * (1.0 / 6 - i2 * (1.0 / 30 - i2 / 42));
}

double tetragamma(double x) {
    double sum = 0;
    for (; x < 6; ++x) sum -= 2 / (x * x * x);
    const double i2 = 1 / (x * x);
    return sum - i2 - i2 / x - i2 * i2 * (0.5 - i2 * (1.0 / 6 - i2 / 6));
}

// y with trigamma(y) = t (t > 0), by Newton's method on 1 / trigamma (Smyth 2004).
double inverse_trigamma(double t) {
    if (t > 1e7) return 1 / std::sqrt(t);
    if (t < 1e-6) return 1 / t;
    double y = 0.5 + 1 / t;
    for (int i = 0; i < 50; ++i) {
        const double tri = trigamma(y);
        const double step = tri * (1 - tri / t) / tetragamma(y);
        y += step;
        if (-step / y < 1e-8) break;
    }
    return y;
}

// The prior of the backends' variances `s2`, each with `df` (empirical Bayes, Smyth 2004): its
// degrees of freedom, from how far the log variances spread beyond what their own degrees of
// freedom explain (infinite when they do not), and its scale.
struct Prior {
    double df = std::numeric_limits<double>::infinity();
    double variance = 0;
};

Prior variance_prior(const std::vector<double>& s2, const std::vector<double>& df) {
    const auto g = static_cast<double>(s2.size());
    std::vector<double> e;
    double mean = 0;
    for (size_t i = 0; i < s2.size(); ++i) {
        e.push_back(std::log(s2[i]) - digamma(df[i] / 2) + std::log(df[i] / 2));
        mean += e.back() / g;
    }
    double excess = 0;
    for (size_t i = 0; i < e.size(); ++i)
        excess += ((e[i] - mean) * (e[i] - mean) * g / (g - 1) - trigamma(df[i] / 2)) / g;
    Prior prior;
    if (excess > 0) prior.df = 2 * inverse_trigamma(excess);
    prior.variance = std::isfinite(prior.df)
                         ? std::exp(mean + digamma(prior.df / 2) - std::log(prior.df / 2))
                         : std::exp(mean);
    return prior;
}

}  // namespace

std::vector<ModelRatio> fit_round_model(const std::vector<RoundCell>& given, size_t backends,
                                        size_t baseline,
                                        const std::vector<double>& least_variance) {
    std::vector<ModelRatio> result(backends);
    auto least = [&](size_t b) {
        return std::max(kLeastVariance, b < least_variance.size() ? least_variance[b] : 0.0);
    };
    std::vector<RoundCell> cells;
    for (const RoundCell& c : given)
        if (c.backend < backends && c.figure_ms > 0 && std::isfinite(c.figure_ms))
            cells.push_back(c);
    // The parameters: each backend's level, then each round's level but the first round's (the
    // backends' levels are those of the first round).
    std::map<size_t, size_t> backend_param, round_param;
    std::optional<size_t> first_round;
    for (const RoundCell& c : cells) {
        backend_param.emplace(c.backend, 0);
        if (!first_round || c.round < *first_round) first_round = c.round;
    }
    if (!first_round || !backend_param.count(baseline)) return result;
    size_t p = 0;
    for (auto& [b, index] : backend_param) index = p++;
    for (const RoundCell& c : cells)
        if (c.round != *first_round && !round_param.count(c.round)) round_param[c.round] = 0;
    for (auto& [r, index] : round_param) index = p++;

    auto params_of = [&](const RoundCell& c) {
        std::vector<size_t> at{backend_param.at(c.backend)};
        if (c.round != *first_round) at.push_back(round_param.at(c.round));
        return at;
    };
    const double df = static_cast<double>(cells.size()) - static_cast<double>(p);
    if (!(df > 0.5)) return result;

    // Least squares, every cell alike.
    Matrix normal(p, std::vector<double>(p, 0));
    std::vector<double> right(p, 0);
    for (const RoundCell& c : cells) {
        const auto at = params_of(c);
        for (size_t i : at) {
            right[i] += std::log(c.figure_ms);
            for (size_t j : at) normal[i][j] += 1;
        }
    }
    const std::optional<Matrix> inv = inverse(normal);
    if (!inv) return result;
    std::vector<double> level(p, 0);
    for (size_t i = 0; i < p; ++i)
        for (size_t j = 0; j < p; ++j) level[i] += (*inv)[i][j] * right[j];

    // Each backend's own variance, unbiased although a noisy backend's noise reaches the others'
    // residuals through the rounds' levels: the residuals are (I - H) y, so a backend's expected
    // squares are sum over backends c of E[b][c] var[c], E[b][c] the sum of (I - H)[i][j]^2 over
    // its cells i and c's cells j; solved for the variances. Its degrees of freedom, as a share of
    // the residual's, are its cells' less their leverages.
    const size_t n = cells.size();
    auto hat = [&](size_t i, size_t j) {
        double h = 0;
        for (size_t a : params_of(cells[i]))
            for (size_t b : params_of(cells[j])) h += (*inv)[a][b];
        return (i == j ? 1.0 : 0.0) - h;
    };
    Matrix expected(backends, std::vector<double>(backends, 0));
    std::vector<double> squares(backends, 0), shares(backends, 0);
    double total_squares = 0;
    for (size_t i = 0; i < n; ++i) {
        double fitted = 0;
        for (size_t a : params_of(cells[i])) fitted += level[a];
        const double residual = std::log(cells[i].figure_ms) - fitted;
        squares[cells[i].backend] += residual * residual;
        shares[cells[i].backend] += hat(i, i);
        total_squares += residual * residual;
        for (size_t j = 0; j < n; ++j) {
            const double h = hat(i, j);
            expected[cells[i].backend][cells[j].backend] += h * h;
        }
    }
    const double pooled = std::max(total_squares / df, kLeastVariance);
    std::vector<double> variance(backends, pooled), variance_df(backends, df);
    std::vector<size_t> own;
    for (size_t b = 0; b < backends; ++b)
        if (shares[b] > 1e-9) own.push_back(b);
    // With three backends or more whose variances spread beyond their own degrees of freedom,
    // each one's is drawn towards the prior's as far as their spread allows; otherwise every
    // backend has the pooled variance and the residual's degrees of freedom.
    if (own.size() >= 3) {
        Matrix system(own.size(), std::vector<double>(own.size(), 0));
        for (size_t k = 0; k < own.size(); ++k)
            for (size_t l = 0; l < own.size(); ++l) system[k][l] = expected[own[k]][own[l]];
        if (const std::optional<Matrix> solve = inverse(system)) {
            std::vector<double> own_s2(own.size(), 0), own_df;
            for (size_t k = 0; k < own.size(); ++k) {
                for (size_t l = 0; l < own.size(); ++l)
                    own_s2[k] += (*solve)[k][l] * squares[own[l]];
                own_s2[k] = std::max(own_s2[k], least(own[k]));
                own_df.push_back(shares[own[k]]);
            }
            const Prior prior = variance_prior(own_s2, own_df);
            if (std::isfinite(prior.df))
                for (size_t k = 0; k < own.size(); ++k) {
                    variance[own[k]] = (prior.df * prior.variance + own_df[k] * own_s2[k]) /
                                       (prior.df + own_df[k]);
                    variance_df[own[k]] = std::min(df, prior.df + own_df[k]);
                }
        }
    }

    for (size_t b = 0; b < backends; ++b) variance[b] = std::max(variance[b], least(b));

    // The difference of a backend's level from the baseline's is a weighted sum of the cells'
    // logarithms (weights X A^-1 c); its variance sums each cell's weight squared times its
    // backend's variance, with Welch-Satterthwaite's degrees of freedom (at most the residual's).
    const size_t base = backend_param.at(baseline);
    for (const auto& [b, i] : backend_param) {
        ModelRatio& m = result[b];
        m.log_ratio = level[i] - level[base];
        if (b == baseline) continue;
        std::vector<double> weight_by_backend(backends, 0);
        for (const RoundCell& c : cells) {
            double w = 0;
            for (size_t j : params_of(c)) w += (*inv)[j][i] - (*inv)[j][base];
            weight_by_backend[c.backend] += w * w;
        }
        double v = 0, fourth_over_df = 0;
        for (size_t k = 0; k < backends; ++k) {
            const double part = weight_by_backend[k] * variance[k];
            v += part;
            if (part > 0) fourth_over_df += part * part / variance_df[k];
        }
        m.log_standard_error = std::sqrt(v);
        m.degrees_of_freedom = fourth_over_df > 0 ? std::min(df, v * v / fourth_over_df) : df;
    }
    return result;
}

}  // namespace harness::output
