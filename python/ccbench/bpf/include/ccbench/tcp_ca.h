/*
 * ccbench/tcp_ca.h: what a congestion control written as a BPF struct_ops object needs,
 * without a vmlinux.h generated from a kernel. Include it instead of vmlinux.h, not
 * beside it.
 *
 * Every struct below is declared with preserve_access_index, so each field access
 * compiles to a CO-RE relocation: the loader finds the field by name in the target's
 * types (the running kernel's BTF, or the simulator's layout). The layouts here are
 * therefore not the kernel's and need not be; each field's type (size, signedness,
 * bitfield width) is, as in Linux 6.18, so the same object loads on either.
 *
 * A program may write only what net/ipv4/bpf_tcp_ca.c allows (Linux 6.18): snd_cwnd,
 * snd_cwnd_cnt, snd_cwnd_stamp, snd_ssthresh, ecn_flags, app_limited, icsk_ca_priv,
 * icsk_ack.pending, sk_pacing_rate and sk_pacing_status. Read bitfields with
 * BPF_CORE_READ_BITFIELD, as the helpers below do.
 */
#ifndef CCBENCH_TCP_CA_H
#define CCBENCH_TCP_CA_H

/* The kernel's fixed-width types; <linux/types.h> needs the host's asm headers, which a
 * -target bpf build does not see. */
typedef unsigned char __u8;
typedef signed char __s8;
typedef unsigned short __u16;
typedef short __s16;
typedef unsigned int __u32;
typedef int __s32;
typedef unsigned long long __u64;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;

#include <stdbool.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

/* include/uapi/linux/bpf.h: the map types the simulator provides, and the flags their
 * helpers take. */
enum {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_HASH = 5,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_SK_STORAGE = 24,
};
#define BPF_ANY 0
#define BPF_NOEXIST 1
#define BPF_EXIST 2
#define BPF_F_NO_PREALLOC (1U << 0)
#define BPF_SK_STORAGE_GET_F_CREATE (1ULL << 0)

/* include/net/tcp.h */
#define TCP_CA_NAME_MAX 16
#define TCP_INFINITE_SSTHRESH 0x7fffffff
#define TCP_CONG_NON_RESTRICTED 0x1
#define TCP_CONG_NEEDS_ECN 0x2

/* tcp_sock.ecn_flags */
#define TCP_ECN_OK 1
#define TCP_ECN_QUEUE_CWR 2
#define TCP_ECN_DEMAND_CWR 4
#define TCP_ECN_SEEN 8

enum tcp_ca_state {
	TCP_CA_Open = 0,
	TCP_CA_Disorder = 1,
	TCP_CA_CWR = 2,
	TCP_CA_Recovery = 3,
	TCP_CA_Loss = 4,
};

enum tcp_ca_event {
	CA_EVENT_TX_START = 0,
	CA_EVENT_CWND_RESTART = 1,
	CA_EVENT_COMPLETE_CWR = 2,
	CA_EVENT_LOSS = 3,
	CA_EVENT_ECN_NO_CE = 4,
	CA_EVENT_ECN_IS_CE = 5,
};

/* The flags of in_ack_event. */
enum tcp_ca_ack_event_flags {
	CA_ACK_SLOWPATH = 1,
	CA_ACK_WIN_UPDATE = 2,
	CA_ACK_ECE = 4,
};

/* sock.sk_pacing_status */
enum sk_pacing {
	SK_PACING_NONE = 0,
	SK_PACING_NEEDED = 1,
	SK_PACING_FQ = 2,
};

/* inet_connection_sock.icsk_ack.pending */
enum inet_csk_ack_state_t {
	ICSK_ACK_SCHED = 1,
	ICSK_ACK_TIMER = 2,
	ICSK_ACK_PUSHED = 4,
	ICSK_ACK_PUSHED2 = 8,
	ICSK_ACK_NOW = 16,
};

union tcp_cc_info;

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct sock {
	unsigned long sk_pacing_rate;     /* bytes per second */
	unsigned long sk_max_pacing_rate; /* SO_MAX_PACING_RATE */
	__u32 sk_pacing_status;           /* enum sk_pacing */
	__u8 sk_pacing_shift;
};

struct inet_connection_sock {
	__u8 icsk_ca_state : 5; /* enum tcp_ca_state */
	struct {
		__u8 pending; /* enum inet_csk_ack_state_t */
	} icsk_ack;
	__u64 icsk_ca_priv[13]; /* the algorithm's own state: inet_csk_ca() */
};

struct tcp_sock {
	/* window */
	__u32 snd_cwnd; /* packets */
	__u32 snd_ssthresh;
	__u32 snd_cwnd_cnt; /* ACKed packets towards the next increase */
	__u32 snd_cwnd_clamp;
	__u32 snd_cwnd_stamp;
	__u32 prior_cwnd; /* cwnd when recovery began, for undo */
	__u32 max_packets_out;
	__u8 is_cwnd_limited : 1;
	/* sequence space */
	__u32 snd_una;
	__u32 snd_nxt;
	__u32 rcv_nxt;
	/* what is in flight */
	__u32 packets_out;
	__u32 sacked_out;
	__u32 lost_out;
	__u32 retrans_out;
	__u32 mss_cache; /* bytes */
	/* delivery */
	__u32 delivered;
	__u32 delivered_ce;
	__u32 lost;
	__u32 app_limited;
	__u32 rate_delivered;
	__u32 rate_interval_us;
	__u8 ecn_flags; /* TCP_ECN_* */
	/* time */
	__u32 srtt_us; /* smoothed RTT << 3 */
	__u32 mdev_us;
	__u64 tcp_mstamp; /* microseconds, the last packet sent or received */
	__u64 tcp_clock_cache; /* nanoseconds */
	__u32 lsndtime; /* jiffies */
};

struct ack_sample {
	__u32 pkts_acked;
	__s32 rtt_us; /* -1 when there was no sample */
	__u32 in_flight;
};

struct rate_sample {
	__u64 prior_mstamp;
	__u32 prior_delivered;
	__u32 prior_delivered_ce;
	__s32 delivered;
	__s32 delivered_ce;
	long interval_us;
	__u32 snd_interval_us;
	__u32 rcv_interval_us;
	long rtt_us;
	int losses;
	__u32 acked_sacked;
	__u32 prior_in_flight;
	__u32 last_end_seq;
	bool is_app_limited;
	bool is_retrans;
	bool is_ack_delayed;
};

/* Linux 6.18's callbacks in its order; the loader matches members by name. */
struct tcp_congestion_ops {
	__u32 (*ssthresh)(struct sock *sk);
	void (*cong_avoid)(struct sock *sk, __u32 ack, __u32 acked);
	void (*set_state)(struct sock *sk, __u8 new_state);
	void (*cwnd_event)(struct sock *sk, enum tcp_ca_event ev);
	void (*in_ack_event)(struct sock *sk, __u32 flags);
	void (*pkts_acked)(struct sock *sk, const struct ack_sample *sample);
	__u32 (*min_tso_segs)(struct sock *sk);
	void (*cong_control)(struct sock *sk, __u32 ack, int flag, const struct rate_sample *rs);
	__u32 (*undo_cwnd)(struct sock *sk);
	__u32 (*sndbuf_expand)(struct sock *sk);
	unsigned long (*get_info)(struct sock *sk, __u32 ext, int *attr, union tcp_cc_info *info);
	char name[TCP_CA_NAME_MAX];
	__u32 flags; /* TCP_CONG_* */
	void (*init)(struct sock *sk);
	void (*release)(struct sock *sk);
};

#pragma clang attribute pop

static inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static inline struct inet_connection_sock *inet_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

/* The algorithm's private state: 104 bytes, zeroed before init. */
static inline void *inet_csk_ca(const struct sock *sk)
{
	return (void *)inet_csk(sk)->icsk_ca_priv;
}

static inline __u8 tcp_ca_state(const struct sock *sk)
{
	return BPF_CORE_READ_BITFIELD(inet_csk(sk), icsk_ca_state);
}

static inline bool tcp_in_slow_start(const struct tcp_sock *tp)
{
	return tp->snd_cwnd < tp->snd_ssthresh;
}

/* include/net/tcp.h (Linux 6.x): cwnd limited the last window, or, in slow start, let
 * cwnd grow to twice what was in flight. */
static inline bool tcp_is_cwnd_limited(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	if (BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited))
		return true;
	if (tcp_in_slow_start(tp))
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return false;
}

/* Sequence numbers compared modulo 2^32. */
static inline bool before(__u32 seq1, __u32 seq2)
{
	return (__s32)(seq1 - seq2) < 0;
}
#define after(seq2, seq1) before(seq1, seq2)

/* The kernel's own Reno pieces, callable as kfuncs (net/ipv4/bpf_tcp_ca.c). */
extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;
extern void tcp_cong_avoid_ai(struct tcp_sock *tp, __u32 w, __u32 acked) __ksym;
extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

#endif /* CCBENCH_TCP_CA_H */
